"""Reading text, tables and pictures from the student's own files (My files), and writing pictures there.

Every file is one of My files, named by a plain file name (``ctx.user_file``,
``ctx.save_user_file``; My files has no folders), never a server path. Nothing is decoded before
its size is known and allowed: a file's bytes before it is read, a picture's width × height ×
channels from its header (PIL opens lazily) before its pixels are, the resize target and the
number of pictures before a batch is read.
"""
from __future__ import annotations

import codecs
import csv
import fnmatch
import io
import re
from pathlib import PurePosixPath
from typing import Any

import torch

from ..base import NodeError, Param, Port, register
from ._helpers import LibraryNode
from ._images import as_pil, pixels, png_of

CATEGORY = "IO"
MODES = ("RGB", "L", "RGBA")
MODE_HELP = "RGB: colour, 3 channels; L: grey, 1 channel; RGBA: colour with transparency, 4 channels"
FORMATS = {"PNG": ".png", "JPEG": ".jpg", "BMP": ".bmp", "TIFF": ".tiff"}
MAX_BATCH_FILES = 10_000   # pictures one ImageBatchReader looks at, whatever their size
CSV_CANCEL_EVERY = 10_000  # rows between two looks at Stop


def _megabytes(size: int) -> str:
    return f"{size} bytes" if size < 1024 else f"{size / 2**20:.1f} MB" if size >= 2**20 else f"{round(size / 1024)} KB"


# -- pictures -----------------------------------------------------------------------------------

def open_image(path: Any, name: str, node: str) -> Any:
    """A picture file opened lazily (its header only), or a NodeError for a file that is no picture."""
    from PIL import Image, UnidentifiedImageError

    try:
        return Image.open(path)
    except Image.DecompressionBombError as exc:
        raise NodeError(f"{node}: '{name}' is a picture far larger than this server reads ({_first_line(exc)}); "
                        "make it smaller before uploading it") from None
    except (UnidentifiedImageError, OSError, ValueError) as exc:
        raise NodeError(f"{node}: '{name}' is not a picture this server can read (PNG, JPEG, BMP, GIF, TIFF, "
                        f"WebP ...): {_first_line(exc)}") from None


def check_decoded_size(ctx, image: Any, name: str, node: str, mode: str) -> None:
    """Refuse a picture whose pixels would be more than the server allows, from its header,
    before any pixel is decoded."""
    width, height = image.size
    channels = max(len(image.getbands()), len(mode))
    try:
        ctx.check_size(width * height * channels, f"{node}: the picture '{name}' ({width}×{height}, "
                                                  f"{channels} channels)")
    except NodeError:
        image.close()
        raise


def decode(image: Any, name: str, node: str, mode: str) -> Any:
    """The picture's pixels in ``mode`` (RGB, L, RGBA)."""
    from PIL import Image

    try:
        image.load()
        return image.convert(mode)
    except (Image.DecompressionBombError, OSError, ValueError, SyntaxError) as exc:
        raise NodeError(f"{node}: '{name}' could not be decoded (the file is damaged or cut short): "
                        f"{_first_line(exc)}") from None
    finally:
        image.close()


def resized(image: Any, size: int) -> Any:
    """A size × size square, bilinear as torchvision's Resize does for a picture."""
    from PIL import Image

    return image if size <= 0 or image.size == (size, size) else image.resize((size, size), Image.BILINEAR)


def _first_line(exc: BaseException) -> str:
    return ((str(exc).strip().splitlines() or [type(exc).__name__])[0])[:200]


def _resize_size(ctx, params: dict[str, Any], node: str, count: int = 1) -> int:
    size = params["resize"]
    if size > 0:
        ctx.check_size(count * size * size * len(params["mode"]),
                       f"{node}: {count} picture{'s' if count != 1 else ''} of {size}×{size}")
    return size


@register
class ImageReader(LibraryNode):
    type = "ImageReader"
    category = CATEGORY
    description = "Reads a picture of your files, as a picture and as a tensor of its pixels."
    details = (
        "Opens a picture of My files (your own folder on the server: upload one on the My files "
        "page) in PNG, JPEG, BMP, GIF, TIFF or WebP. mode RGB gives 3 channels (red, green, blue), L "
        "one grey channel, RGBA a fourth one for transparency. resize > 0 squeezes it into a "
        "resize × resize square (MNIST networks want 28). 'image' shows the picture; 'tensor' holds "
        "its pixels, shape [C, H, W] with values from 0 (dark) to 1 (bright): add a batch "
        "dimension (Unsqueeze dim 0) before a Conv2d or a model. A picture larger than the server "
        "allows is refused before it is read."
    )
    outputs = (Port("image", "IMAGE", description="The picture"),
               Port("tensor", description="Its pixels, [C, H, W], 0 … 1"))
    params = (
        Param("path", "string", "", "A picture of My files, such as digit.png"),
        Param("mode", "select", "RGB", MODE_HELP, options=MODES),
        Param("resize", "int", 0, "Make it a square of this many pixels a side (0 keeps its size)", min=0),
    )
    cacheable = False   # a file of the student's can change between two runs

    def run(self, ctx, params):
        size = _resize_size(ctx, params, self.type)
        path, mode = ctx.user_file(params["path"], "path"), params["mode"]
        image = open_image(path, path.name, self.type)
        check_decoded_size(ctx, image, path.name, self.type, mode)
        image = resized(decode(image, path.name, self.type, mode), size)
        return {"image": png_of(image, path.name), "tensor": pixels(image)}


def expand_braces(pattern: str) -> list[str]:
    """'*.{png,jpg}' -> ['*.png', '*.jpg'] (one level of braces, as shells write it)."""
    found = re.search(r"\{([^{}]*)\}", pattern)
    if found is None:
        return [pattern]
    head, tail = pattern[:found.start()], pattern[found.end():]
    return [p for choice in found.group(1).split(",") for p in expand_braces(head + choice + tail)]


@register
class ImageBatchReader(LibraryNode):
    type = "ImageBatchReader"
    category = CATEGORY
    description = "Reads every picture of your files whose name matches a pattern, as one batch tensor."
    details = (
        "Reads the pictures of My files (your own folder on the server) whose names match "
        "'pattern' (* stands for anything: *.png every PNG, digit_* every name starting with "
        "digit_, *.{png,jpg} both kinds), in name order, and stacks them into one tensor [N, C, H, W] "
        "of values 0 … 1. Every picture is resized to resize × resize so they fit together. "
        "max_images > 0 reads only the first ones. My files has no folders, so 'directory' stays "
        "empty (or '.'). A file that is no picture is skipped, with a line in the run log."
    )
    outputs = (Port("images", description="The pictures, [N, C, H, W], 0 … 1"),
               Port("count", "SCALAR", description="How many were read"))
    params = (
        Param("directory", "string", "", "Leave empty: My files is one folder (empty or '.' means My files)"),
        Param("pattern", "string", "*.png", "Which names to read: * stands for anything, e.g. *.png, *.{png,jpg}"),
        Param("resize", "int", 224, "Every picture becomes a square of this many pixels a side", min=1),
        Param("max_images", "int", 0, "Read at most this many (0 = all of them)", min=0),
        Param("mode", "select", "RGB", MODE_HELP, options=MODES),
    )
    cacheable = False

    def run(self, ctx, params):
        directory = params["directory"].strip().strip("/\\")
        if directory not in ("", "."):
            raise NodeError(f"ImageBatchReader: 'directory' = {params['directory']!r}, but My files has no folders; "
                            "leave directory empty to read your own files, and upload the pictures on the My "
                            "files page")
        pattern = params["pattern"].strip() or "*"
        if "/" in pattern or "\\" in pattern:
            raise NodeError(f"ImageBatchReader: 'pattern' = {pattern!r} names a folder; My files has none: use a "
                            "name pattern such as *.png")
        patterns = expand_braces(pattern)
        names = sorted(n for n in ctx.list_user_files() if any(fnmatch.fnmatchcase(n, p) for p in patterns))
        if params["max_images"] > 0:
            names = names[:params["max_images"]]
        if not names:
            raise NodeError(f"ImageBatchReader: no file of My files matches '{pattern}'; upload the pictures on "
                            "the My files page, or change the pattern")
        if len(names) > MAX_BATCH_FILES:
            raise NodeError(f"ImageBatchReader: {len(names):,} files match '{pattern}', more than the "
                            f"{MAX_BATCH_FILES:,} one node reads; set max_images or a narrower pattern")
        size = _resize_size(ctx, params, self.type, len(names))
        mode, tensors = params["mode"], []
        for name in names:
            if ctx.cancelled():
                raise NodeError("ImageBatchReader stopped before it had read every picture")
            try:
                image = open_image(ctx.user_file(name, "pattern"), name, self.type)
            except NodeError as exc:
                ctx.log(f"ImageBatchReader skipped '{name}': {exc}")
                continue
            check_decoded_size(ctx, image, name, self.type, mode)
            try:
                image = decode(image, name, self.type, mode)
            except NodeError as exc:
                ctx.log(f"ImageBatchReader skipped '{name}': {exc}")
                continue
            tensors.append(pixels(resized(image, size)))
        if not tensors:
            raise NodeError(f"ImageBatchReader: none of the {len(names)} files matching '{pattern}' is a picture it "
                            "could read (see the run log)")
        return {"images": torch.stack(tensors), "count": len(tensors)}


def _output_name(name: str, fmt: str) -> str:
    """The name with the format's extension (CodefyUI changes a wrong one)."""
    text = name.strip()
    if not text or "/" in text or "\\" in text:
        return text  # the files' own check names the problem
    path = PurePosixPath(text)
    return text if path.suffix.lower() == FORMATS[fmt] else (path.stem if path.suffix else text) + FORMATS[fmt]


@register
class ImageWriter(LibraryNode):
    type = "ImageWriter"
    category = CATEGORY
    description = "Saves a picture in your files as PNG, JPEG, BMP or TIFF."
    details = (
        "Writes the picture wired into 'image' (a picture from another node, or an image tensor "
        "[H, W], [C, H, W] with 1, 3 or 4 channels, or a batch [N, C, H, W], of which the first is "
        "saved; values 0 … 1 or 0 … 255) to a file of My files (your own folder on the server). The "
        "file name gets the format's extension (.png, .jpg, .bmp, .tiff); a file of that name is "
        "replaced. JPEG and BMP keep no transparency, so an RGBA picture is saved without it. 'path' is the "
        "saved file's name."
    )
    inputs = (Port("image", "IMAGE", description="The picture to save"),)
    outputs = (Port("path", "STRING", description="The saved file's name in My files"),)
    params = (
        Param("path", "string", "output.png", "The file's name in My files, such as output.png"),
        Param("format", "select", "PNG", "The file format", options=tuple(FORMATS)),
    )
    cacheable = False

    def run(self, ctx, params, image):
        if isinstance(image, torch.Tensor) and image.dim() == 4 and image.shape[0] > 1:
            image = image[:1]
        picture = as_pil(image, "image", self.type)
        fmt = params["format"]
        if fmt == "JPEG" and picture.mode not in ("RGB", "L"):
            picture = picture.convert("RGB")
        elif picture.mode not in ("RGB", "L", "RGBA"):
            picture = picture.convert("RGBA" if "A" in picture.getbands() else "RGB")
        buffer = io.BytesIO()
        try:
            picture.save(buffer, format=fmt)
        except (OSError, ValueError, KeyError) as exc:
            raise NodeError(f"ImageWriter could not write a {fmt} file of this picture: {_first_line(exc)}") from None
        return {"path": ctx.save_user_file(_output_name(params["path"], fmt), buffer.getvalue(), "path")}


# -- text and tables ---------------------------------------------------------------------------

@register
class FileReader(LibraryNode):
    type = "FileReader"
    category = CATEGORY
    description = "Reads a text or CSV file of your files: its text, and for a table of numbers a tensor."
    details = (
        "Reads a file of My files (your own folder on the server: upload one on the My files page). "
        "'text' is everything in it, as text. With mode csv the file is also read as a table "
        "(commas between values, one row per line; csv_header skips the first line, the column "
        "names) and 'tensor' holds it, shape [rows, columns], when every value is a number and every "
        "row has as many; otherwise 'tensor' is empty and the run log says why. encoding is how the "
        "file's bytes stand for letters: utf-8 almost always, latin-1 for some older files."
    )
    outputs = (Port("text", "STRING", description="The file's text"),
               Port("tensor", description="A CSV table of numbers, [rows, columns] (empty otherwise)"))
    params = (
        Param("path", "string", "", "A file of My files, such as data.csv"),
        Param("mode", "select", "text", "text: the text only; csv: also a table of numbers as a tensor",
              options=("text", "csv")),
        Param("encoding", "string", "utf-8", "How the file's bytes stand for letters (utf-8, latin-1, ...)"),
        Param("csv_header", "bool", True, "The first line of the CSV holds column names: skip it"),
    )
    cacheable = False

    def run(self, ctx, params):
        encoding = params["encoding"].strip() or "utf-8"
        try:
            codecs.lookup(encoding)
        except LookupError:
            raise NodeError(f"FileReader: 'encoding' = {encoding!r} is not a text encoding Python knows; use "
                            "utf-8 (or latin-1, cp1252, utf-16 ...)") from None
        path = ctx.user_file(params["path"], "path")
        size = path.stat().st_size
        ctx.check_size(size, f"FileReader: reading '{path.name}' ({_megabytes(size)})")
        try:
            text = path.read_bytes().decode(encoding)
        except UnicodeDecodeError as exc:
            raise NodeError(f"FileReader: '{path.name}' is not {encoding} text (byte {exc.start} does not fit); "
                            "set 'encoding' to the one it was saved in, such as latin-1") from None
        tensor = torch.tensor([])
        if params["mode"] == "csv":
            tensor = self._table(ctx, text, path.name, params["csv_header"])
        return {"text": text, "tensor": tensor}

    @staticmethod
    def _table(ctx, text: str, name: str, header: bool) -> torch.Tensor:
        rows = []
        for number, row in enumerate(csv.reader(io.StringIO(text, newline=""))):
            if number % CSV_CANCEL_EVERY == 0 and ctx.cancelled():
                raise NodeError("FileReader stopped before it had read the whole table")
            if (number == 0 and header) or not row:
                continue
            try:
                rows.append([float(cell) for cell in row])
            except ValueError:
                ctx.log(f"FileReader: line {number + 1} of '{name}' has a value that is not a number, so "
                        "'tensor' is empty (the text is still read)")
                return torch.tensor([])
        if len({len(r) for r in rows}) > 1:
            ctx.log(f"FileReader: the rows of '{name}' do not all have the same number of values, so 'tensor' "
                    "is empty (the text is still read)")
            return torch.tensor([])
        return torch.tensor(rows, dtype=torch.float32)
