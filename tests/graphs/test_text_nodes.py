"""The text and embedding nodes (LLM): each against a direct computation, its messages, its limits."""
from __future__ import annotations

import math

import numpy
import pytest
import torch

from apps.graphs.nodes.base import NodeError, registry


def run(ctx, type_key, raw_params=None, **inputs):
    node = registry()[type_key]
    params, problems = node.coerce_params(raw_params or {})
    assert problems == []
    return node().run(ctx, params, **inputs)


def steps(ctx):
    return {s["name"]: s for s in ctx.steps}


def vectors(n=6, d=4, seed=0):
    return torch.randn(n, d, generator=torch.Generator().manual_seed(seed))


# -- PositionalEncoding ------------------------------------------------------------------------

def reference_pe(seq, d):
    pe = torch.zeros(seq, d)
    for pos in range(seq):
        for col in range(d):
            angle = pos / 10000 ** ((col - col % 2) / d)
            pe[pos, col] = math.sin(angle) if col % 2 == 0 else math.cos(angle)
    return pe


@pytest.mark.parametrize("d", [4, 5])
def test_sinusoidal_pe_is_the_transformer_formula_added_to_the_input(ctx, d):
    x = vectors(3, d)
    out = run(ctx, "PositionalEncoding", tensor=x)
    assert torch.allclose(out["pe"], reference_pe(3, d), atol=1e-5)
    assert torch.allclose(out["tensor"], x + out["pe"])
    assert out["tensor"].shape == x.shape and out["pe"].shape == (3, d)


def test_pe_broadcasts_over_the_batch_of_seq_batch_d(ctx):
    x = vectors(12, 1).reshape(3, 2, 2)
    out = run(ctx, "PositionalEncoding", tensor=x)
    assert out["pe"].shape == (3, 2)
    assert torch.allclose(out["tensor"], x + out["pe"].unsqueeze(1))


def test_learnable_pe_is_seeded_random_scaled_by_root_d(ctx):
    x = torch.zeros(3, 4)
    out = run(ctx, "PositionalEncoding", {"mode": "learnable", "seed": 7}, tensor=x)
    expected = torch.randn(3, 4, generator=torch.Generator().manual_seed(7)) / 2
    assert torch.equal(out["pe"], expected)
    assert torch.equal(run(ctx, "PositionalEncoding", {"mode": "learnable", "seed": 7}, tensor=x)["pe"], expected)
    assert not torch.equal(run(ctx, "PositionalEncoding", {"mode": "learnable", "seed": 8}, tensor=x)["pe"], expected)


def test_pe_steps(ctx):
    ctx.verbose = True
    out = run(ctx, "PositionalEncoding", tensor=vectors(3, 4))
    assert [s["name"] for s in ctx.steps] == ["input", "compute_pe", "add"]
    assert torch.equal(steps(ctx)["compute_pe"]["tensors"]["pe"], out["pe"])
    assert torch.equal(steps(ctx)["add"]["tensors"]["output"], out["tensor"])


def test_pe_refuses_a_sequence_past_max_len_and_bad_shapes(ctx):
    with pytest.raises(NodeError, match=r"seq_len=5 but max_len=4; raise max_len or shorten"):
        run(ctx, "PositionalEncoding", {"max_len": 4}, tensor=torch.zeros(5, 2))
    with pytest.raises(NodeError, match=r"expects \[seq, D\] or \[seq, batch, D\], but got shape \[4\]"):
        run(ctx, "PositionalEncoding", tensor=torch.zeros(4))
    _, problems = registry()["PositionalEncoding"].coerce_params({"max_len": 0})
    assert problems == ["'max_len' value 0 is below minimum 1"]


def test_pe_table_is_bounded(ctx):
    ctx.size_limit = 10
    with pytest.raises(NodeError, match="PositionalEncoding's table would need 12 elements"):
        run(ctx, "PositionalEncoding", tensor=torch.zeros(3, 4))


# -- EmbeddingScatter --------------------------------------------------------------------------

def normalised(points):
    centred = points - points.mean(axis=0, keepdims=True)
    return centred / numpy.abs(centred).max()


def test_scatter_pca_is_sklearns_projection_centred_and_scaled(ctx):
    from sklearn.decomposition import PCA

    x = vectors(6, 4)
    labels = list("abcdef")
    out = run(ctx, "EmbeddingScatter", embeddings=x, labels=labels)
    expected = normalised(PCA(n_components=2, random_state=42).fit_transform(x.double().numpy()))
    assert out["points_2d"].shape == (6, 2) and out["points_2d"].dtype == torch.float32
    assert numpy.allclose(out["points_2d"].numpy(), expected, atol=1e-5)
    assert out["labels"] == labels
    assert float(out["points_2d"].abs().max()) == pytest.approx(1.0)


def test_scatter_pca_is_the_same_every_run_and_labels_are_optional(ctx):
    x = vectors(5, 3)
    first = run(ctx, "EmbeddingScatter", embeddings=x)
    assert torch.equal(first["points_2d"], run(ctx, "EmbeddingScatter", embeddings=x)["points_2d"])
    assert first["labels"] == []


def test_scatter_pads_a_single_dimension_and_a_single_vector(ctx):
    out = run(ctx, "EmbeddingScatter", embeddings=torch.tensor([[1.0], [2.0], [4.0]]))
    assert out["points_2d"].shape == (3, 2) and torch.all(out["points_2d"][:, 1] == 0)
    single = run(ctx, "EmbeddingScatter", embeddings=torch.tensor([1.0, 2.0, 3.0]), labels=["x"])
    assert single["points_2d"].tolist() == [[0.0, 0.0]] and single["labels"] == ["x"]


def test_scatter_tsne_is_sklearns_seeded_layout(ctx):
    from sklearn.manifold import TSNE

    x = vectors(8, 4)
    out = run(ctx, "EmbeddingScatter", {"method": "t-SNE", "perplexity": 3.0, "seed": 1}, embeddings=x)
    expected = TSNE(n_components=2, perplexity=3.0, random_state=1, init="pca",
                    learning_rate="auto").fit_transform(x.double().numpy())
    assert numpy.allclose(out["points_2d"].numpy(), normalised(expected), atol=1e-4)


def test_scatter_tsne_lowers_perplexity_below_n_and_falls_back_to_pca_under_five(ctx):
    ctx.verbose = True
    run(ctx, "EmbeddingScatter", {"method": "t-SNE", "perplexity": 30.0}, embeddings=vectors(6, 3))
    assert steps(ctx)["tsne"]["scalars"] == {"perplexity": 5.0}
    assert "perplexity 30 must be below the number of vectors (6); 5 was used" in ctx.logs[-1]
    ctx.steps.clear()
    out = run(ctx, "EmbeddingScatter", {"method": "t-SNE"}, embeddings=vectors(4, 3))
    assert [s["name"] for s in ctx.steps] == ["input", "fallback", "pca", "normalize"]
    assert "PCA was used instead" in ctx.logs[-1]
    assert torch.equal(out["points_2d"], run(ctx, "EmbeddingScatter", embeddings=vectors(4, 3))["points_2d"])


def test_scatter_steps_follow_the_reference(ctx):
    ctx.verbose = True
    x = vectors(6, 4)
    out = run(ctx, "EmbeddingScatter", embeddings=x)
    assert [s["name"] for s in ctx.steps] == ["input", "pca", "normalize"]
    assert steps(ctx)["input"]["scalars"] == {"N": 6.0, "D": 4.0}
    from sklearn.decomposition import PCA
    pc1 = PCA(n_components=2).fit(x.double().numpy()).explained_variance_ratio_[0]
    assert steps(ctx)["pca"]["scalars"]["explained_variance_pc1"] == pytest.approx(pc1)
    assert torch.equal(steps(ctx)["normalize"]["tensors"]["points_2d"], out["points_2d"])


def test_scatter_bad_input_messages(ctx):
    with pytest.raises(NodeError, match=r"expects 'embeddings' as \[N, D\].*\[2, 2, 2\]"):
        run(ctx, "EmbeddingScatter", embeddings=torch.zeros(2, 2, 2))
    with pytest.raises(NodeError, match=r"at least one vector.*\[0, 16\]"):
        run(ctx, "EmbeddingScatter", embeddings=torch.zeros(0, 16))
    with pytest.raises(NodeError, match="'labels' has 2 labels but 'embeddings' has 3 vectors"):
        run(ctx, "EmbeddingScatter", embeddings=vectors(3, 2), labels=["a", "b"])
    with pytest.raises(NodeError, match="NaN or infinite"):
        run(ctx, "EmbeddingScatter", embeddings=torch.tensor([[1.0, math.nan], [0.0, 1.0]]))
    with pytest.raises(NodeError, match="needs a list of labels"):
        run(ctx, "EmbeddingScatter", embeddings=vectors(3, 2), labels="abc")


def test_scatter_is_bounded(ctx, monkeypatch):
    from apps.graphs.nodes.library import embeddings
    monkeypatch.setattr(embeddings, "TSNE_MAX_POINTS", 6)
    with pytest.raises(NodeError, match="t-SNE takes at most 6 vectors, but 'embeddings' has 7; use method PCA"):
        run(ctx, "EmbeddingScatter", {"method": "t-SNE"}, embeddings=vectors(7, 2))
    ctx.size_limit = 20
    with pytest.raises(NodeError, match="EmbeddingScatter's table would need 21 elements"):
        run(ctx, "EmbeddingScatter", embeddings=vectors(7, 3))


# -- TextInput -----------------------------------------------------------------------------------

def test_text_input_hands_on_its_value(ctx):
    assert run(ctx, "TextInput")["text"] == "The quick brown fox jumps over the lazy dog."
    assert run(ctx, "TextInput", {"value": "two\nlines "})["text"] == "two\nlines "


# -- Tokenizer -----------------------------------------------------------------------------------

FAMILIES = ["cl100k_base", "o200k_base", "p50k_base", "gpt2", "bert-base-uncased", "Llama-3", "T5"]


def test_tokenizer_offers_codefyuis_families_and_the_offline_ones():
    family = next(p for p in registry()["Tokenizer"].params if p.name == "family")
    assert family.default == "cl100k_base"
    assert list(family.options) == FAMILIES + ["character", "word", "bpe"]


def test_character_tokens_are_characters_with_their_unicode_numbers(ctx):
    out = run(ctx, "Tokenizer", {"family": "character", "text": "Hi 貓"})
    assert out == {"tokens": ["H", "i", " ", "貓"], "token_ids": [72, 105, 32, 35987],
                   "offsets": [[0, 1], [1, 2], [2, 3], [3, 4]]}


def test_word_tokens_number_words_by_first_appearance(ctx):
    text = "the cat sat on the mat."
    out = run(ctx, "Tokenizer", {"family": "word"}, text=text)
    assert out["tokens"] == ["the", "cat", "sat", "on", "the", "mat", "."]
    assert out["token_ids"] == [0, 1, 2, 3, 0, 4, 5]
    assert [text[s:e] for s, e in out["offsets"]] == out["tokens"]


def test_bpe_learns_the_most_frequent_pairs_from_the_text(ctx):
    from apps.graphs.nodes.library.text import learn_bpe

    text = "low low low lower lowest"
    learnt, vocab = learn_bpe(text, 3)
    # pieces: "low" x1, " low" x2, " lower", " lowest": l+o and o+w occur 5 times, l+o first.
    assert learnt == [("l", "o"), ("lo", "w"), (" ", "low")]
    assert vocab == sorted(set(text)) + ["lo", "low", " low"]
    out = run(ctx, "Tokenizer", {"family": "bpe", "bpe_merges": 3}, text=text)
    assert out["tokens"] == ["low", " low", " low", " low", "e", "r", " low", "e", "s", "t"]
    assert out["token_ids"] == [vocab.index(t) for t in out["tokens"]]
    assert "".join(out["tokens"]) == text
    assert [text[s:e] for s, e in out["offsets"]] == out["tokens"]
    assert run(ctx, "Tokenizer", {"family": "bpe", "bpe_merges": 0}, text=text)["tokens"] == list(text)


def test_bpe_stops_when_no_pair_repeats_and_is_deterministic(ctx):
    from apps.graphs.nodes.library.text import learn_bpe

    assert learn_bpe("abcd", 10)[0] == []
    text = "the cat sat on the mat"
    assert learn_bpe(text, 50) == learn_bpe(text, 50)


def test_tokenizer_steps_show_the_tokens(ctx):
    ctx.verbose = True
    out = run(ctx, "Tokenizer", {"family": "word"}, text="a b a")
    assert [s["name"] for s in ctx.steps] == ["input_text", "tokenize"]
    assert steps(ctx)["input_text"]["scalars"] == {"chars": 5.0}
    tokenize = steps(ctx)["tokenize"]
    assert tokenize["scalars"] == {"num_tokens": 3.0, "unique_ids": 2.0}
    assert tokenize["tensors"]["token_ids"].tolist() == out["token_ids"]
    assert "`a` `b` `a`" in tokenize["description"]
    ctx.steps.clear()
    run(ctx, "Tokenizer", {"family": "bpe"}, text="aa aa aa")
    assert [s["name"] for s in ctx.steps] == ["input_text", "learn_merges", "tokenize"]


def test_tokenizer_reads_its_text_param_or_the_wired_text(ctx):
    assert run(ctx, "Tokenizer", {"family": "word", "text": "x y"})["tokens"] == ["x", "y"]
    assert run(ctx, "Tokenizer", {"family": "word", "text": "x y"}, text="z")["tokens"] == ["z"]
    assert run(ctx, "Tokenizer", {"family": "word"}, text=["first one", "second"])["tokens"] == ["first", "one"]


def test_tokenizer_bad_input_and_bounds(ctx, monkeypatch):
    with pytest.raises(NodeError, match="no text to cut"):
        run(ctx, "Tokenizer", {"family": "word", "text": ""})
    from apps.graphs.nodes.library import text
    monkeypatch.setattr(text, "MAX_TEXT_CHARS", 10)
    with pytest.raises(NodeError, match="at most 10 characters, but the text has 11"):
        run(ctx, "Tokenizer", {"family": "character"}, text="x" * 11)
    monkeypatch.setattr(text, "MAX_TEXT_CHARS", 1000)
    ctx.size_limit = 5
    with pytest.raises(NodeError, match="Tokenizer's text would need 6 elements"):
        run(ctx, "Tokenizer", {"family": "character"}, text="x" * 6)
    ctx.size_limit = 10**8
    monkeypatch.setattr(text, "MAX_BPE_WORK", 100)
    with pytest.raises(NodeError, match="too much work for one run; lower bpe_merges"):
        run(ctx, "Tokenizer", {"family": "bpe", "bpe_merges": 10}, text=" ".join(f"w{i}" for i in range(20)))
    _, problems = registry()["Tokenizer"].coerce_params({"bpe_merges": 5000})
    assert problems == ["'bpe_merges' value 5000 is above maximum 1000"]


def test_bpe_learning_stops_when_the_run_is_stopped(ctx):
    ctx.stop_after = 1
    with pytest.raises(NodeError, match="stopped"):
        run(ctx, "Tokenizer", {"family": "bpe"}, text="aa aa aa bb bb bb")


@pytest.mark.parametrize("family", ["bert-base-uncased", "Llama-3", "T5"])
def test_hugging_face_families_are_not_available_offline(ctx, family):
    with pytest.raises(NodeError, match=f"the {family} family is not available on this server.*offline.*"
                                        "character, word or bpe"):
        run(ctx, "Tokenizer", {"family": family})


@pytest.fixture
def no_network(monkeypatch):
    """Any attempt to open a connection, or tiktoken's downloading get_encoding, fails the test."""
    import socket

    import tiktoken

    def refuse(*args, **kwargs):
        raise AssertionError("the Tokenizer tried to use the network")
    monkeypatch.setattr(socket, "socket", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(tiktoken, "get_encoding", refuse)


@pytest.mark.parametrize("family, file", [("cl100k_base", "cl100k_base.tiktoken"), ("o200k_base", "o200k_base.tiktoken"),
                                          ("p50k_base", "p50k_base.tiktoken"), ("gpt2", "r50k_base.tiktoken")])
def test_an_absent_encoding_file_names_the_family_the_file_and_the_folder(ctx, tmp_path, monkeypatch, no_network,
                                                                          family, file):
    from apps.graphs.nodes.library import text
    from codefyui import conf
    monkeypatch.setattr(conf, "TOKENIZER_DIR", str(tmp_path / "tok"))
    monkeypatch.setattr(text, "BUNDLED_PACKAGE", "no_such_package_here")  # cl100k_base's and o200k_base's too
    with pytest.raises(NodeError) as caught:
        run(ctx, "Tokenizer", {"family": family})
    message = str(caught.value)
    assert f"the {family} encoding is not installed" in message
    assert f"put the file {file} in {tmp_path / 'tok'}" in message
    assert "use the family character, word or bpe" in message


# -- the GPT encodings that ship with the product ------------------------------------------------

@pytest.fixture
def shipped(tmp_path, monkeypatch, no_network):
    """An empty TOKENIZER_DIR (so the shipped files are used), no network, no encoding loaded yet."""
    from apps.graphs.nodes.library import text
    from codefyui import conf
    monkeypatch.setattr(conf, "TOKENIZER_DIR", str(tmp_path / "empty"))
    text._ENCODINGS.clear()
    yield text
    text._ENCODINGS.clear()


# Ids tiktoken gives for these texts: "hello world" is tiktoken's own test (its tests/test_encoding.py,
# cl100k_base [15339, 1917]); the others are the cases tiktoken-compatible tokenizers' test suites
# pin against tiktoken for the same texts (o200k_base's "hello world" is [24912, 2375] in each).
KNOWN_IDS = [("cl100k_base", "hello world", [15339, 1917]),
             ("cl100k_base", "!hello1234567", [0, 15339, 4513, 10961, 22]),
             ("cl100k_base", "<|endoftext|>", [27, 91, 8862, 728, 428, 91, 29]),
             ("o200k_base", "hello world", [24912, 2375]),
             ("o200k_base", "a\n\n", [64, 279]),
             ("o200k_base", " 日本語とEnglish 12345!\n", [17428, 40909, 5330, 28881, 220, 7633, 2548, 4175])]


@pytest.mark.parametrize("family, text, ids", KNOWN_IDS)
def test_the_shipped_encodings_give_tiktokens_ids_offline(ctx, shipped, family, text, ids):
    out = run(ctx, "Tokenizer", {"family": family}, text=text)
    assert out["token_ids"] == ids
    if text.isascii():
        assert "".join(out["tokens"]) == text
    assert shipped.encoding_file(family) == shipped.bundled_file(family)
    assert shipped.encoding_file(family).name == f"{family}.tiktoken.gz"


@pytest.mark.parametrize("family, end", [("cl100k_base", 100257), ("o200k_base", 199999)])
def test_the_shipped_encodings_read_special_tokens_and_round_trip(ctx, shipped, family, end):
    text = "Señor 貓 🐈 said\n\tit's 3.14159!<|endoftext|>"
    special = run(ctx, "Tokenizer", {"family": family, "show_special_tokens": True}, text=text)
    assert special["token_ids"][-1] == end and special["tokens"][-1] == "<|endoftext|>"
    encoding = shipped.tiktoken_encoding(family)
    assert encoding.decode(special["token_ids"]) == text
    assert encoding.n_vocab == {"cl100k_base": 100277, "o200k_base": 200019}[family]


def test_encoding_with_the_shipped_files_never_touches_a_socket(ctx, tmp_path, monkeypatch):
    import socket

    from apps.graphs.nodes.library import text
    from codefyui import conf

    def refuse(*args, **kwargs):
        raise AssertionError("the Tokenizer tried to reach the network")
    for name in ("connect", "connect_ex", "sendto"):
        monkeypatch.setattr(socket.socket, name, refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path / "no-cache"))
    monkeypatch.setattr(conf, "TOKENIZER_DIR", str(tmp_path / "empty"))
    monkeypatch.setattr(text, "_ENCODINGS", {})   # each encoding is built inside the test
    for family, _, ids in KNOWN_IDS[::3]:
        assert run(ctx, "Tokenizer", {"family": family}, text="hello world")["token_ids"] == ids
    assert not (tmp_path / "no-cache").exists()


@pytest.mark.parametrize("family", ["cl100k_base", "o200k_base"])
def test_the_shipped_files_are_the_ones_tiktoken_checks_its_downloads_against(monkeypatch, no_network, family):
    """tiktoken's own constructor names the hash it expects of the file; the shipped file has it."""
    import gzip
    import hashlib

    from tiktoken_ext import openai_public

    from apps.graphs.nodes.library import text
    asked = {}
    monkeypatch.setattr(openai_public, "load_tiktoken_bpe", lambda url, expected_hash=None: asked.update(
        url=url, hash=expected_hash) or {})
    openai_public.ENCODING_CONSTRUCTORS[family]()
    assert asked["url"].endswith(f"/{family}.tiktoken")
    content = gzip.decompress(text.bundled_file(family).read_bytes())
    assert hashlib.sha256(content).hexdigest() == asked["hash"] == text.BUNDLED_SHA256[family]


def test_the_administrators_file_wins_over_the_shipped_one(ctx, tmp_path, monkeypatch, shipped):
    from codefyui import conf
    monkeypatch.setattr(conf, "TOKENIZER_DIR", str(tmp_path))
    write_encoding(tmp_path, "o200k_base.tiktoken")
    assert shipped.encoding_file("o200k_base") == tmp_path / "o200k_base.tiktoken"
    assert run(ctx, "Tokenizer", {"family": "o200k_base"}, text="the cat")["tokens"] == ["the", " c", "at"]


def test_p50k_and_gpt2_do_not_ship(shipped):
    assert shipped.bundled_file("p50k_base") is None and shipped.bundled_file("gpt2") is None


def test_a_damaged_shipped_file_is_refused_in_words(ctx, shipped, monkeypatch):
    monkeypatch.setitem(shipped.BUNDLED_SHA256, "cl100k_base", "0" * 64)
    with pytest.raises(NodeError, match="the cl100k_base encoding that comes with CodefyUI is damaged on this "
                                        "server. Use the family character, word or bpe meanwhile"):
        run(ctx, "Tokenizer", {"family": "cl100k_base"})


MERGES = [b"th", b"the", b" c", b"at"]


def write_encoding(folder, name):
    """A tiny hand-made encoding: the 256 single bytes, then four merges."""
    import base64
    tokens = [bytes([b]) for b in range(256)] + MERGES
    folder.mkdir(exist_ok=True)
    (folder / name).write_bytes(b"".join(base64.b64encode(t) + b" %d\n" % i for i, t in enumerate(tokens)))
    return {t: i for i, t in enumerate(tokens)}


def test_a_gpt_family_reads_its_file_from_the_folder_and_downloads_nothing(ctx, tmp_path, monkeypatch, no_network):
    import tiktoken

    from apps.graphs.nodes.library.text import CL100K_PATTERN
    from codefyui import conf
    monkeypatch.setattr(conf, "TOKENIZER_DIR", str(tmp_path))
    ranks = write_encoding(tmp_path, "cl100k_base.tiktoken")
    text = "the cat<|endoftext|> 貓"
    out = run(ctx, "Tokenizer", {"family": "cl100k_base"}, text=text)
    direct = tiktoken.Encoding("direct", pat_str=CL100K_PATTERN, mergeable_ranks=ranks,
                               special_tokens={"<|endoftext|>": 100257})
    assert out["token_ids"] == direct.encode(text, disallowed_special=())
    assert out["tokens"][:4] == ["the", " c", "at", "<"]
    assert out["offsets"][:3] == [[0, 3], [3, 5], [5, 7]]
    assert out["offsets"][-1][1] == len(text)
    special = run(ctx, "Tokenizer", {"family": "cl100k_base", "show_special_tokens": True}, text=text)
    assert 100257 in special["token_ids"] and "<|endoftext|>" in special["tokens"]


def test_a_broken_encoding_file_is_refused_with_a_message(ctx, tmp_path, monkeypatch, no_network):
    from codefyui import conf
    monkeypatch.setattr(conf, "TOKENIZER_DIR", str(tmp_path))
    (tmp_path / "p50k_base.tiktoken").write_text("not base64 at all\n")
    with pytest.raises(NodeError, match="p50k_base.tiktoken in .* is not a tiktoken encoding file"):
        run(ctx, "Tokenizer", {"family": "p50k_base"})
    (tmp_path / "p50k_base.tiktoken").write_text("YQ== 0\n")
    with pytest.raises(NodeError, match="not a complete encoding: 255 of the 256 single bytes"):
        run(ctx, "Tokenizer", {"family": "p50k_base"})


def test_the_split_patterns_and_special_tokens_are_tiktokens_own(monkeypatch, no_network):
    """tiktoken's own constructors, with their file loading stubbed out, give our definitions."""
    from tiktoken_ext import openai_public

    from apps.graphs.nodes.library.text import TIKTOKEN_FAMILIES
    monkeypatch.setattr(openai_public, "load_tiktoken_bpe", lambda *args, **kwargs: {})
    monkeypatch.setattr(openai_public, "data_gym_to_mergeable_bpe_ranks", lambda *args, **kwargs: {})
    for family, (_, pattern, specials) in TIKTOKEN_FAMILIES.items():
        theirs = openai_public.ENCODING_CONSTRUCTORS[family]()
        assert (theirs["pat_str"], theirs["special_tokens"]) == (pattern, specials), family


# -- WordVector ----------------------------------------------------------------------------------

def table():
    import json

    from apps.graphs.nodes.library.embeddings import BACKENDS
    return json.loads(BACKENDS["demo-16d"].read_text())["vectors"]


def test_word_vector_looks_up_the_bundled_rows(ctx):
    out = run(ctx, "WordVector")
    vectors = table()
    assert out["labels"] == ["king", "queen", "man", "woman", "cat", "dog"]
    assert out["embeddings"].shape == (6, 16) and out["embeddings"].dtype == torch.float32
    assert torch.allclose(out["embeddings"], torch.tensor([vectors[w] for w in out["labels"]]))


def test_demo_vectors_cover_the_lessons_words():
    words = set(table())
    assert len(words) >= 66
    lesson = ("angel ant apple bee bird boat boy bread brother bus butterfly car cat cheese dog dolphin dream "
              "duchess duke eagle father fish fly girl god goddess horse imagine jump king kitten lion man mother "
              "owl pizza plane prince princess puppy queen rabbit rain remember run shark ship sister snow sparrow "
              "sun swim think tiger truck walk whale wind woman").split()
    assert set(lesson) <= words


def test_the_script_writes_the_bundled_table():
    import importlib.util

    from apps.graphs.nodes.library.embeddings import BACKENDS
    spec = importlib.util.spec_from_file_location("make", BACKENDS["demo-16d"].with_name("make_demo_16d.py"))
    make = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(make)
    assert make.table()["vectors"] == table()


def nearest(query, exclude=()):
    words = sorted(table())
    matrix = torch.tensor([table()[w] for w in words])
    sims = torch.nn.functional.cosine_similarity(matrix, query.unsqueeze(0), dim=1)
    return [words[i] for i in sims.argsort(descending=True).tolist() if words[i] not in exclude]


def test_king_minus_man_plus_woman_is_nearest_queen_and_cat_is_near_dog():
    v = {w: torch.tensor(x) for w, x in table().items()}
    assert nearest(v["king"] - v["man"] + v["woman"], ("king", "man", "woman"))[0] == "queen"
    assert nearest(v["cat"], ("cat",))[0] == "dog"
    assert nearest(v["car"], ("car",))[0] in ("bus", "truck", "bike")


def test_word_vector_unknown_words_are_dropped_with_a_log_or_kept_as_zeros(ctx):
    out = run(ctx, "WordVector", tokens=["The", "Cat", "zork", " dog"])
    assert out["labels"] == ["cat", "dog"]
    assert ctx.logs == ["WordVector: not in demo-16d, dropped: the, zork"]
    kept = run(ctx, "WordVector", {"keep_oov": True}, tokens=["cat", "zork"])
    assert kept["labels"] == ["cat", "zork"]
    assert kept["embeddings"][1].abs().sum() == 0
    assert torch.equal(kept["embeddings"][0], out["embeddings"][0])


def test_word_vector_normalize_gives_unit_rows_and_splits_commas(ctx):
    out = run(ctx, "WordVector", {"words": "king,queen, cat", "normalize": True})
    assert out["labels"] == ["king", "queen", "cat"]
    assert torch.allclose(out["embeddings"].norm(dim=1), torch.ones(3))


def test_word_vector_steps(ctx):
    ctx.verbose = True
    out = run(ctx, "WordVector", {"words": "king zork", "normalize": True})
    assert [s["name"] for s in ctx.steps] == ["input_words", "lookup", "normalize"]
    assert steps(ctx)["input_words"]["scalars"] == {"input_count": 2.0, "vocab_size": float(len(table()))}
    assert steps(ctx)["lookup"]["scalars"] == {"matched": 1.0, "oov": 1.0, "dim": 16.0}
    assert torch.equal(steps(ctx)["normalize"]["tensors"]["embeddings"], out["embeddings"])


def test_word_vector_bad_input(ctx, monkeypatch):
    with pytest.raises(NodeError, match="no words to look up"):
        run(ctx, "WordVector", {"words": " , "})
    with pytest.raises(NodeError, match=r"none of the words \(zork, blip\) is in demo-16d"):
        run(ctx, "WordVector", {"words": "zork blip"})
    with pytest.raises(NodeError, match="needs a list of words"):
        run(ctx, "WordVector", tokens={"a": 1})
    from apps.graphs.nodes.library import embeddings
    monkeypatch.setattr(embeddings, "MAX_WORDS", 3)
    with pytest.raises(NodeError, match="at most 3 words at once, but got 4"):
        run(ctx, "WordVector", {"words": "a b c d"})


# -- CosineSimilarity ----------------------------------------------------------------------------

def test_cosine_similarity_is_torchs_and_lists_the_best_keys(ctx):
    q, k = vectors(2, 4, seed=1), vectors(5, 4, seed=2)
    labels = list("abcde")
    out = run(ctx, "CosineSimilarity", {"top_k": 3}, queries=q, keys=k, key_labels=labels)
    expected = torch.nn.functional.cosine_similarity(q.unsqueeze(1), k.unsqueeze(0), dim=2)
    assert torch.allclose(out["similarity"], expected, atol=1e-6)
    best = expected.argsort(dim=1, descending=True)[:, :3].tolist()
    assert out["top_k_indices"] == best
    assert out["top_k_labels"] == [[labels[j] for j in row] for row in best]


def test_cosine_similarity_one_query_no_labels_and_k_past_the_keys(ctx):
    out = run(ctx, "CosineSimilarity", {"top_k": 9}, queries=torch.tensor([1.0, 0.0]),
              keys=torch.tensor([[0.0, 2.0], [3.0, 0.0], [1.0, 1.0]]))
    assert out["similarity"].shape == (1, 3)
    assert out["top_k_indices"] == [[1, 2, 0]] and out["top_k_labels"] == [[]]


def test_cosine_similarity_excludes_words_from_the_lists(ctx):
    keys = torch.tensor([[1.0, 0.0], [0.9, 0.1], [0.0, 1.0]])
    out = run(ctx, "CosineSimilarity", {"top_k": 5, "exclude_self_words": "King, man"},
              queries=torch.tensor([[1.0, 0.0]]), keys=keys, key_labels=["king", "man", "queen"])
    assert out["top_k_labels"] == [["queen"]] and out["top_k_indices"] == [[2]]
    run(ctx, "CosineSimilarity", {"exclude_self_words": "king"}, queries=keys, keys=keys)
    assert "exclude_self_words needs 'key_labels'" in ctx.logs[-1]


def test_the_analogy_through_the_nodes_finds_queen(ctx):
    words = run(ctx, "WordVector", {"words": " ".join(sorted(table()))})
    king, man, woman = (run(ctx, "WordVector", {"words": w})["embeddings"] for w in ("king", "man", "woman"))
    out = run(ctx, "CosineSimilarity", {"exclude_self_words": "king,man,woman"}, queries=king - man + woman,
              keys=words["embeddings"], key_labels=words["labels"])
    assert out["top_k_labels"][0][0] == "queen"


def test_cosine_similarity_steps(ctx):
    ctx.verbose = True
    out = run(ctx, "CosineSimilarity", {"top_k": 2}, queries=vectors(2, 3), keys=vectors(4, 3, 1),
              key_labels=list("wxyz"))
    assert [s["name"] for s in ctx.steps] == ["input", "similarity", "top_k"]
    assert steps(ctx)["input"]["scalars"] == {"Q": 2.0, "K": 4.0, "D": 3.0}
    assert torch.equal(steps(ctx)["similarity"]["tensors"]["similarity"], out["similarity"])
    assert steps(ctx)["top_k"]["tensors"]["top_k_indices"].tolist() == out["top_k_indices"]


def test_cosine_similarity_bad_input(ctx):
    with pytest.raises(NodeError, match="queries have D=3 numbers per vector but keys have D=4"):
        run(ctx, "CosineSimilarity", queries=vectors(2, 3), keys=vectors(2, 4))
    with pytest.raises(NodeError, match=r"expects 'keys' as \[N, D\].*\[1, 2, 3\]"):
        run(ctx, "CosineSimilarity", queries=vectors(2, 3), keys=torch.zeros(1, 2, 3))
    with pytest.raises(NodeError, match="'key_labels' has 1 labels but 'keys' has 2 vectors"):
        run(ctx, "CosineSimilarity", queries=vectors(2, 3), keys=vectors(2, 3), key_labels=["a"])
    with pytest.raises(NodeError, match=r"at least one query and one key.*\[0, 3\]"):
        run(ctx, "CosineSimilarity", queries=vectors(2, 3), keys=torch.zeros(0, 3))


def test_step_descriptions_typeset(ctx):
    """Every formula in these nodes' steps is one the Inspector can typeset."""
    import re

    from latex2mathml.converter import convert
    ctx.verbose = True
    run(ctx, "PositionalEncoding", tensor=vectors(3, 4))
    run(ctx, "PositionalEncoding", {"mode": "learnable"}, tensor=vectors(3, 4))
    run(ctx, "EmbeddingScatter", embeddings=vectors(6, 4))
    run(ctx, "WordVector", {"normalize": True})
    run(ctx, "CosineSimilarity", queries=vectors(2, 3), keys=vectors(4, 3, 1))
    for s in ctx.steps:
        for formula in re.findall(r"\$(.+?)\$", s["description"]):
            convert(formula)
        assert "\\" not in re.sub(r"\$.*?\$", "", s["description"]), s["name"]
