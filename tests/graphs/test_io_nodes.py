"""FileReader, ImageReader, ImageBatchReader and ImageWriter (apps/graphs/nodes/library/io_nodes.py)
in a student's own files (My files), against numpy's and PIL's own reading of the same files."""
from __future__ import annotations

import io
import struct
import zlib

import numpy as np
import pytest
import torch
from PIL import Image

from apps.graphs.nodes.base import NodeError, registry
from apps.graphs.nodes.library._images import PngImage
from apps.runs.engine.files import UserFiles


@pytest.fixture
def files(ctx, tmp_path):
    ctx.files = UserFiles(tmp_path / "ada", max_bytes=2**20)
    (tmp_path / "ada").mkdir()
    return ctx.files


def put(files, name, data: bytes):
    (files.folder / name).write_bytes(data)


def picture(width=5, height=4, mode="RGB", seed=0) -> Image.Image:
    bands = len(mode)
    array = np.random.default_rng(seed).integers(0, 256, (height, width, bands), dtype=np.uint8)
    return Image.fromarray(array[..., 0] if bands == 1 else array, mode)


def png_bytes(image: Image.Image, fmt="PNG") -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, format=fmt)
    return buffer.getvalue()


def png_header(width: int, height: int) -> bytes:
    """A PNG that claims a size in its header and holds no pixels (what a decompression bomb looks like)."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(b"\0" * 16)) + chunk(b"IEND", b""))


def run(ctx, type_key, inputs=None, **given):
    cls = registry()[type_key]
    return cls().run(ctx, {**cls.coerce_params({})[0], **given}, **(inputs or {}))


def expected_pixels(image: Image.Image) -> torch.Tensor:
    array = np.asarray(image, dtype=np.float32) / 255
    return torch.from_numpy(array if array.ndim == 3 else array[..., None]).permute(2, 0, 1)


def test_the_nodes_have_codefyuis_ports_and_params():
    declared = {key: ([p.name for p in registry()[key].inputs], [(p.name, p.type) for p in registry()[key].outputs],
                      {p.name: p.default for p in registry()[key].params})
                for key in ("FileReader", "ImageReader", "ImageBatchReader", "ImageWriter")}
    assert declared == {
        "FileReader": ([], [("text", "STRING"), ("tensor", "TENSOR")],
                       {"path": "", "mode": "text", "encoding": "utf-8", "csv_header": True}),
        "ImageReader": ([], [("image", "IMAGE"), ("tensor", "TENSOR")], {"path": "", "mode": "RGB", "resize": 0}),
        "ImageBatchReader": ([], [("images", "TENSOR"), ("count", "SCALAR")],
                             {"directory": "", "pattern": "*.png", "resize": 224, "max_images": 0, "mode": "RGB"}),
        "ImageWriter": (["image"], [("path", "STRING")], {"path": "output.png", "format": "PNG"}),
    }
    assert all(registry()[k].category == "IO" and not registry()[k].cacheable for k in declared)


# -- FileReader -----------------------------------------------------------------------------------

def test_filereader_reads_text_as_it_is(ctx, files):
    put(files, "notes.txt", "Zwölf Boxkämpfer\njagen Viktor\n".encode())
    out = run(ctx, "FileReader", path="notes.txt")
    assert out["text"] == "Zwölf Boxkämpfer\njagen Viktor\n" and out["tensor"].numel() == 0


def test_filereader_reads_a_numeric_csv_as_numpy_does(ctx, files):
    put(files, "data.csv", b"a,b,c\n1,2.5,-3\n4,5,6e-1\n\n7,8,9\n")
    out = run(ctx, "FileReader", path="data.csv", mode="csv")
    expected = np.loadtxt(io.StringIO("1,2.5,-3\n4,5,6e-1\n7,8,9\n"), delimiter=",", dtype=np.float32)
    assert out["tensor"].dtype == torch.float32 and torch.equal(out["tensor"], torch.from_numpy(expected))
    assert out["text"].startswith("a,b,c")
    headless = run(ctx, "FileReader", path="data.csv", mode="csv", csv_header=False)
    assert headless["tensor"].numel() == 0 and "line 1" in ctx.logs[-1]


def test_filereader_gives_an_empty_tensor_for_a_table_that_is_not_all_numbers(ctx, files):
    put(files, "mixed.csv", b"x,y\n1,cat\n")
    put(files, "ragged.csv", b"x,y\n1,2\n3\n")
    assert run(ctx, "FileReader", path="mixed.csv", mode="csv")["tensor"].numel() == 0
    assert "line 2 of 'mixed.csv' has a value that is not a number" in ctx.logs[-1]
    assert run(ctx, "FileReader", path="ragged.csv", mode="csv")["tensor"].numel() == 0
    assert "do not all have the same number of values" in ctx.logs[-1]


def test_filereader_reads_other_encodings_and_names_a_wrong_one(ctx, files):
    put(files, "old.txt", "café".encode("latin-1"))
    assert run(ctx, "FileReader", path="old.txt", encoding="latin-1")["text"] == "café"
    with pytest.raises(NodeError, match="'old.txt' is not utf-8 text .*set 'encoding' to the one it was saved in"):
        run(ctx, "FileReader", path="old.txt")
    with pytest.raises(NodeError, match="'encoding' = 'klingon' is not a text encoding Python knows"):
        run(ctx, "FileReader", path="old.txt", encoding="klingon")


def test_filereader_refuses_a_missing_file_and_paths_outside_my_files(ctx, files):
    with pytest.raises(NodeError, match="'path' = 'nope.txt': there is no such file in My files"):
        run(ctx, "FileReader", path="nope.txt")
    with pytest.raises(NodeError, match="is a path on the server"):
        run(ctx, "FileReader", path="/etc/passwd")
    with pytest.raises(NodeError, match="leaves your files"):
        run(ctx, "FileReader", path="../other/notes.txt")
    with pytest.raises(NodeError, match="'path' is empty"):
        run(ctx, "FileReader")


def test_filereader_checks_the_files_size_before_reading_it(ctx, files):
    put(files, "big.txt", b"x" * 5000)
    ctx.size_limit = 4000
    with pytest.raises(NodeError, match=r"FileReader: reading 'big.txt' \(5 KB\) would need 5,000 elements"):
        run(ctx, "FileReader", path="big.txt")


def test_filereader_stops_a_long_table_when_asked(ctx, files):
    put(files, "long.csv", b"1,2\n" * 30_000)
    ctx.stop_after = 1
    with pytest.raises(NodeError, match="stopped before it had read the whole table"):
        run(ctx, "FileReader", path="long.csv", mode="csv", csv_header=False)


# -- ImageReader ----------------------------------------------------------------------------------

@pytest.mark.parametrize("mode", ["RGB", "L", "RGBA"])
def test_imagereader_gives_pils_pixels_from_0_to_1(ctx, files, mode):
    source = picture(5, 4, "RGBA", seed=1)
    put(files, "p.png", png_bytes(source))
    out = run(ctx, "ImageReader", path="p.png", mode=mode)
    assert torch.equal(out["tensor"], expected_pixels(source.convert(mode)))
    assert out["tensor"].shape == (len(mode), 4, 5)
    assert isinstance(out["image"], PngImage) and (out["image"].width, out["image"].height) == (5, 4)
    assert Image.open(io.BytesIO(out["image"].data)).mode == mode


def test_imagereader_resizes_bilinear_as_pil_does(ctx, files):
    source = picture(9, 6, seed=2)
    put(files, "p.jpg", png_bytes(source, "JPEG"))
    out = run(ctx, "ImageReader", path="p.jpg", resize=4)
    decoded = Image.open(io.BytesIO(png_bytes(source, "JPEG"))).convert("RGB")
    assert torch.equal(out["tensor"], expected_pixels(decoded.resize((4, 4), Image.BILINEAR)))
    assert out["image"].width == out["image"].height == 4


def test_imagereader_names_a_file_that_is_no_picture_and_a_damaged_one(ctx, files):
    put(files, "fake.png", b"this is text, not a picture")
    with pytest.raises(NodeError, match="ImageReader: 'fake.png' is not a picture this server can read"):
        run(ctx, "ImageReader", path="fake.png")
    put(files, "cut.png", png_bytes(picture(40, 40, seed=3))[:200])
    with pytest.raises(NodeError, match="'cut.png' could not be decoded"):
        run(ctx, "ImageReader", path="cut.png")


def test_imagereader_refuses_an_oversize_picture_from_its_header_before_decoding(ctx, files, monkeypatch):
    from apps.graphs.nodes.library import io_nodes

    put(files, "huge.png", png_header(9000, 9000))   # 243 million numbers, in a file of 70 bytes
    monkeypatch.setattr(io_nodes, "decode", lambda *a: pytest.fail("decoded before the check"))
    with pytest.raises(NodeError, match=r"the picture 'huge.png' \(9000×9000, 3 channels\) would need 243,000,000"):
        run(ctx, "ImageReader", path="huge.png")
    put(files, "bomb.png", png_header(100_000, 100_000))
    with pytest.raises(NodeError, match="'bomb.png' is a picture far larger than this server reads"):
        run(ctx, "ImageReader", path="bomb.png")


def test_imagereader_checks_the_resize_target_first(ctx, files):
    with pytest.raises(NodeError, match=r"1 picture of 10000×10000 would need 300,000,000"):
        run(ctx, "ImageReader", path="anything.png", resize=10_000)


def test_imagereader_refuses_paths_outside_my_files(ctx, files):
    with pytest.raises(NodeError, match="names a folder; My files has none"):
        run(ctx, "ImageReader", path="pics/cat.png")
    with pytest.raises(NodeError, match="no such file in My files"):
        run(ctx, "ImageReader", path="cat.png")


# -- ImageBatchReader -----------------------------------------------------------------------------

@pytest.fixture
def three(files):
    sources = {f"digit_{i}.png": picture(6, 6, seed=10 + i) for i in (2, 0, 1)}
    for name, image in sources.items():
        put(files, name, png_bytes(image))
    put(files, "photo.jpg", png_bytes(picture(6, 6, seed=20), "JPEG"))
    put(files, "notes.txt", b"not a picture")
    return sources


def test_imagebatchreader_stacks_the_matching_pictures_in_name_order(ctx, three):
    out = run(ctx, "ImageBatchReader", resize=3)
    expected = torch.stack([expected_pixels(three[f"digit_{i}.png"].resize((3, 3), Image.BILINEAR))
                            for i in range(3)])
    assert out["count"] == 3 and torch.equal(out["images"], expected)
    assert run(ctx, "ImageBatchReader", resize=3, max_images=2)["images"].shape == (2, 3, 3, 3)
    assert run(ctx, "ImageBatchReader", resize=3, pattern="*.{png,jpg}", mode="L")["images"].shape == (4, 1, 3, 3)
    assert run(ctx, "ImageBatchReader", resize=3, directory=".", pattern="digit_1*")["count"] == 1


def test_imagebatchreader_skips_a_file_that_is_no_picture(ctx, three, files):
    put(files, "broken.png", b"text")
    out = run(ctx, "ImageBatchReader", resize=2)
    assert out["count"] == 3 and "ImageBatchReader skipped 'broken.png'" in ctx.logs[-1]
    with pytest.raises(NodeError, match="none of the 1 files matching 'notes.txt' is a picture"):
        run(ctx, "ImageBatchReader", pattern="notes.txt")


def test_imagebatchreader_messages_for_folders_and_no_match(ctx, three):
    with pytest.raises(NodeError, match="'directory' = 'data/images', but My files has no folders"):
        run(ctx, "ImageBatchReader", directory="data/images")
    with pytest.raises(NodeError, match="'pattern' = '../x/\\*.png' names a folder"):
        run(ctx, "ImageBatchReader", pattern="../x/*.png")
    with pytest.raises(NodeError, match="no file of My files matches '\\*.gif'"):
        run(ctx, "ImageBatchReader", pattern="*.gif")


def test_imagebatchreader_bounds_the_batch_and_each_picture_before_decoding(ctx, three, files):
    ctx.size_limit = 3 * 3 * 100 * 100 - 1
    with pytest.raises(NodeError, match="3 pictures of 100×100 would need 90,000"):
        run(ctx, "ImageBatchReader", resize=100)
    ctx.size_limit = 10_000
    put(files, "digit_3.png", png_header(200, 200))
    with pytest.raises(NodeError, match=r"the picture 'digit_3.png' \(200×200, 3 channels\)"):
        run(ctx, "ImageBatchReader", resize=2)


def test_imagebatchreader_stops_when_asked(ctx, three):
    ctx.stop_after = 1
    with pytest.raises(NodeError, match="stopped before it had read every picture"):
        run(ctx, "ImageBatchReader", resize=2)


# -- ImageWriter ----------------------------------------------------------------------------------

def test_a_png_round_trips_through_imagewriter_and_imagereader(ctx, files):
    tensor = expected_pixels(picture(7, 5, seed=4))
    assert run(ctx, "ImageWriter", {"image": tensor}, path="out.png") == {"path": "out.png"}
    back = run(ctx, "ImageReader", path="out.png")
    assert torch.equal(back["tensor"], tensor)
    again = run(ctx, "ImageWriter", {"image": back["image"]}, path="copy")
    assert again == {"path": "copy.png"}
    assert torch.equal(run(ctx, "ImageReader", path="copy.png")["tensor"], tensor)


@pytest.mark.parametrize("fmt, ext", [("JPEG", ".jpg"), ("BMP", ".bmp"), ("TIFF", ".tiff")])
def test_imagewriter_writes_each_format_with_its_extension(ctx, files, fmt, ext):
    rgba = picture(4, 4, "RGBA", seed=5)
    saved = run(ctx, "ImageWriter", {"image": rgba}, path="out.png", format=fmt)["path"]
    assert saved == "out" + ext
    written = Image.open(files.folder / saved)
    assert written.format == fmt and written.size == (4, 4)
    if fmt == "TIFF":
        assert np.array_equal(np.asarray(written.convert("RGBA")), np.asarray(rgba))
    if fmt == "BMP":  # no transparency in a BMP
        assert np.array_equal(np.asarray(written.convert("RGB")), np.asarray(rgba.convert("RGB")))


def test_imagewriter_saves_the_first_of_a_batch_and_a_grey_tensor(ctx, files):
    batch = torch.rand(3, 1, 4, 6, generator=torch.Generator().manual_seed(0))
    run(ctx, "ImageWriter", {"image": batch}, path="first.png")
    assert Image.open(files.folder / "first.png").size == (6, 4)
    assert np.array_equal(np.asarray(Image.open(files.folder / "first.png")),
                          (batch[0, 0] * 255).round().to(torch.uint8).numpy())


def test_imagewriter_messages(ctx, files):
    with pytest.raises(NodeError, match="ImageWriter: 'image' needs an image"):
        run(ctx, "ImageWriter", {"image": "a cat"})
    with pytest.raises(NodeError, match=r"'image' needs an image tensor .* got shape \[2, 2, 2, 2, 2\]"):
        run(ctx, "ImageWriter", {"image": torch.zeros(2, 2, 2, 2, 2)})
    with pytest.raises(NodeError, match="names a folder; My files has none"):
        run(ctx, "ImageWriter", {"image": torch.zeros(3, 2, 2)}, path="out/x.png")
    with pytest.raises(NodeError, match="is a path on the server"):
        run(ctx, "ImageWriter", {"image": torch.zeros(3, 2, 2)}, path="/tmp/x.png")
    files.max_bytes = 10
    with pytest.raises(NodeError, match="does not fit in your files"):
        run(ctx, "ImageWriter", {"image": torch.zeros(3, 8, 8)})
    assert files.list() == []


def test_a_picture_wired_into_a_tensor_input_arrives_as_channels_height_width_in_0_to_1():
    """An IMAGE output (a PngImage or a PIL image) into a TENSOR input: [C, H, W], values 0…1."""
    from apps.graphs.nodes.library._helpers import to_tensor
    from apps.graphs.nodes.library._images import png_of

    image = Image.new("RGB", (3, 2), (255, 0, 51))
    for value in (image, png_of(image)):
        t = to_tensor(value, "tensor", "Softmax", "cpu")
        assert t.shape == (3, 2, 3) and t.dtype == torch.float32
        assert torch.allclose(t[:, 0, 0], torch.tensor([1.0, 0.0, 0.2]))
    assert to_tensor(Image.new("L", (2, 2), 255), "tensor", "Softmax", "cpu").shape == (1, 2, 2)
