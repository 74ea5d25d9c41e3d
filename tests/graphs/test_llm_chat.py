"""LLMChat: offline by default; against a fake OpenAI-compatible server on 127.0.0.1 when an
administrator configured one (CODEFYUI_LLM_*)."""
from __future__ import annotations

import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
import torch

from apps.graphs.nodes.base import NodeError, registry
from codefyui import conf


def chat(ctx, **inputs):
    raw = inputs.pop("params", {})
    params, problems = registry()["LLMChat"].coerce_params(raw)
    assert problems == []
    return registry()["LLMChat"]().run(ctx, params, **inputs)


class Fake:
    """A tiny OpenAI-compatible server: records each request and answers what ``reply`` says."""

    def __init__(self):
        self.requests: list[dict] = []
        self.reply = lambda body: (200, json.dumps({"choices": [{"message": {"role": "assistant",
                                                                           "content": "Hello, class."}}]}))
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                length = int(self.headers.get("Content-Length", 0))
                body = json.loads(self.rfile.read(length))
                fake.requests.append({"path": self.path, "body": body,
                                      "auth": self.headers.get("Authorization")})
                status, text = fake.reply(body)
                data = text.encode() if isinstance(text, str) else text
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def fake(monkeypatch):
    server = Fake()
    monkeypatch.setattr(conf, "LLM_BASE_URL", server.url + "/")
    monkeypatch.setattr(conf, "LLM_MODEL", "tiny-chat")
    monkeypatch.setattr(conf, "LLM_API_KEY", "")
    monkeypatch.setattr(conf, "LLM_TIMEOUT_S", 5)
    yield server
    server.close()


def test_llm_chat_is_offline_by_default(ctx):
    assert conf.LLM_BASE_URL == "" and not registry()["LLMChat"].cacheable
    with pytest.raises(NodeError) as exc:
        chat(ctx, text="hi")
    assert str(exc.value).startswith("No LLM provider is configured on this server (it runs offline).")
    assert "CODEFYUI_LLM_BASE_URL" in str(exc.value) and "CODEFYUI_LLM_MODEL" in str(exc.value)


def test_llm_chat_sends_the_prompt_and_text_and_returns_the_answer(ctx, fake):
    out = chat(ctx, text="The cat sat.", array=torch.tensor([1.0, 2.5]), image=torch.zeros(3, 2, 2))
    assert out == {"text": "Hello, class."}
    [request] = fake.requests
    assert request["path"] == "/v1/chat/completions" and request["auth"] is None
    assert request["body"] == {
        "model": "tiny-chat", "max_tokens": 1024, "temperature": 0.7,
        "messages": [{"role": "system", "content": "You are a helpful assistant."},
                     {"role": "user", "content": "Summarize the provided input.\n\nThe cat sat.\n\n"
                                                 "Array input:\n[1.0, 2.5]"}]}
    assert ctx.logs == ["LLMChat: the image input is not sent; only text goes to the model"]
    assert ctx.reports[-1] == {"text": "Hello, class."}


def test_llm_chat_sends_the_key_when_one_is_set(ctx, fake, monkeypatch):
    monkeypatch.setattr(conf, "LLM_API_KEY", "sk-school")
    chat(ctx, text="hi")
    assert fake.requests[0]["auth"] == "Bearer sk-school"


def test_llm_chat_messages_for_a_bad_endpoint(ctx, fake):
    fake.reply = lambda body: (500, '{"error": "model not loaded"}')
    with pytest.raises(NodeError, match=r"answered HTTP 500 .*model not loaded.*ask an administrator"):
        chat(ctx, text="hi")
    fake.reply = lambda body: (200, "this is not json")
    with pytest.raises(NodeError, match="not an OpenAI-style chat completion"):
        chat(ctx, text="hi")
    fake.reply = lambda body: (200, '{"choices": []}')
    with pytest.raises(NodeError, match="not an OpenAI-style chat completion"):
        chat(ctx, text="hi")
    fake.reply = lambda body: (200, b" " * (1024 * 1024 + 10))
    with pytest.raises(NodeError, match="larger than 1024 KiB"):
        chat(ctx, text="hi")
    with pytest.raises(NodeError, match="nothing to send"):
        chat(ctx, params={"prompt": ""})
    with pytest.raises(NodeError, match="at most 4,096 are sent"):
        chat(ctx, text="hi", array=torch.zeros(5000))


def test_llm_chat_says_when_the_connection_is_refused(ctx, monkeypatch):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nobody listens there
    monkeypatch.setattr(conf, "LLM_BASE_URL", f"http://127.0.0.1:{port}/v1")
    monkeypatch.setattr(conf, "LLM_MODEL", "tiny-chat")
    with pytest.raises(NodeError, match=rf"The LLM endpoint http://127.0.0.1:{port}/v1 refused the connection"):
        chat(ctx, text="hi")
