"""LLMChat (category LLM): a chat model's answer, from an OpenAI-compatible endpoint an
administrator configured on the school's network; offline (the default) it says so."""
from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

import torch

from codefyui import conf

from ..base import NodeError, Param, Port, register
from ._helpers import LibraryNode

OFFLINE = ("No LLM provider is configured on this server (it runs offline). An administrator "
           "can set CODEFYUI_LLM_BASE_URL (an OpenAI-compatible endpoint on the school's "
           "network) and CODEFYUI_LLM_MODEL to turn LLMChat on.")
MAX_RESPONSE_BYTES = 1024 * 1024
MAX_ARRAY_ELEMENTS = 4096


def configured() -> dict[str, str] | None:
    """The endpoint and model LLMChat calls, or None when the server runs offline."""
    base, model = (conf.LLM_BASE_URL or "").strip(), (conf.LLM_MODEL or "").strip()
    return {"base_url": base.rstrip("/"), "model": model} if base and model else None


def _array_text(value: Any) -> str:
    if isinstance(value, torch.Tensor):
        if value.numel() > MAX_ARRAY_ELEMENTS:
            raise NodeError(f"LLMChat: 'array' has {value.numel():,} numbers; at most "
                            f"{MAX_ARRAY_ELEMENTS:,} are sent, so slice it first")
        value = value.detach().cpu().tolist()
    text = json.dumps(value, ensure_ascii=False, default=str)
    if len(text) > 16 * MAX_ARRAY_ELEMENTS:
        raise NodeError(f"LLMChat: 'array' is {len(text):,} characters as JSON; at most "
                        f"{16 * MAX_ARRAY_ELEMENTS:,} are sent, so shorten it first")
    return text


@register
class LLMChat(LibraryNode):
    type = "LLMChat"
    category = "LLM"
    description = "Asks a chat model (a large language model) and gives its answer as text."
    details = (
        "Sends one chat message to the language model this server's administrator set up "
        "(an OpenAI-compatible endpoint on the school's network; nothing goes to the "
        "internet otherwise) and outputs the answer. What is sent: 'system_prompt' as the "
        "system message, then one user message made of 'prompt', the 'text' input and, when "
        "wired, the 'array' input written as JSON (at most 4,096 numbers), with "
        "'max_tokens' and 'temperature'. A wired 'image' is not sent (the log says so). "
        "Without a configured endpoint the node stops with a message saying so. The answer "
        "can differ from run to run, so it is never served from the cache."
    )
    inputs = (Port("text", "STRING", optional=True), Port("image", "IMAGE", optional=True),
              Port("array", "LIST", optional=True))
    outputs = (Port("text", "STRING"),)
    params = (
        Param("prompt", "string", "Summarize the provided input.", "The instruction sent before the inputs"),
        Param("system_prompt", "string", "You are a helpful assistant.", "How the model should behave"),
        Param("max_tokens", "int", 1024, "The longest answer, in tokens", min=1, max=200_000),
        Param("temperature", "float", 0.7, "0 answers the same way each time; higher varies more",
              min=0.0, max=2.0),
    )
    cacheable = False

    def run(self, ctx, params, text=None, image=None, array=None):
        endpoint = configured()
        if endpoint is None:
            raise NodeError(OFFLINE)
        parts = [params["prompt"].strip(), "" if text is None else str(text).strip()]
        if array is not None:
            parts.append("Array input:\n" + _array_text(array))
        message = "\n\n".join(p for p in parts if p)
        if not message:
            raise NodeError("LLMChat has nothing to send: type a 'prompt' or wire the 'text' input")
        if image is not None:
            ctx.log("LLMChat: the image input is not sent; only text goes to the model")
        messages = [{"role": "system", "content": params["system_prompt"]}] if params["system_prompt"].strip() else []
        messages.append({"role": "user", "content": message})
        body = {"model": endpoint["model"], "messages": messages, "max_tokens": params["max_tokens"],
                "temperature": params["temperature"]}
        answer = self._ask(endpoint, body)
        ctx.progress(text=answer)
        return {"text": answer}

    @staticmethod
    def _ask(endpoint: dict[str, str], body: dict[str, Any]) -> str:
        url = endpoint["base_url"] + "/chat/completions"
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if (conf.LLM_API_KEY or "").strip():
            headers["Authorization"] = "Bearer " + conf.LLM_API_KEY.strip()
        request = urllib.request.Request(url, data=json.dumps(body).encode(), headers=headers, method="POST")
        timeout = max(1, conf.LLM_TIMEOUT_S)
        where = f"The LLM endpoint {endpoint['base_url']}"
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                raw = response.read(MAX_RESPONSE_BYTES + 1)
        except urllib.error.HTTPError as exc:
            detail = exc.read(400).decode("utf-8", "replace").strip().splitlines()
            raise NodeError(f"{where} answered HTTP {exc.code} ({exc.reason})"
                            + (f": {detail[0][:200]}" if detail else "")
                            + "; ask an administrator to check the endpoint, model and key") from None
        except (urllib.error.URLError, OSError) as exc:  # a timeout is an OSError, bare or as a URLError's reason
            reason = getattr(exc, "reason", exc)
            if isinstance(reason, TimeoutError):
                raise NodeError(f"{where} did not answer within {timeout} s; try again, or ask an "
                                "administrator to raise CODEFYUI_LLM_TIMEOUT_S") from None
            why = "refused the connection" if isinstance(reason, ConnectionRefusedError) else f"cannot be reached ({reason})"
            raise NodeError(f"{where} {why}; ask an administrator whether the model server is running") from None
        if len(raw) > MAX_RESPONSE_BYTES:
            raise NodeError(f"{where} sent an answer larger than {MAX_RESPONSE_BYTES // 1024} KiB; "
                            "lower max_tokens")
        try:
            answer = json.loads(raw.decode("utf-8"))["choices"][0]["message"]["content"]
        except (ValueError, KeyError, IndexError, TypeError, UnicodeDecodeError):
            raise NodeError(f"{where} sent an answer that is not an OpenAI-style chat completion "
                            "(no choices[0].message.content in JSON)") from None
        if not isinstance(answer, str):
            raise NodeError(f"{where} sent an answer whose message content is not text")
        return answer
