"""GraphInput and GraphOutput (category IO): a graph's named inputs and outputs, for a graph
used as a function. Here a GraphInput's value is its own 'default' param."""
from __future__ import annotations

import json
from typing import Any

from ..base import NodeError, Param, Port, register
from ._helpers import LibraryNode
from ._images import png_of

TYPES = ("string", "number", "integer", "boolean", "json", "image")
TRUE, FALSE = ("true", "1", "yes", "on"), ("false", "0", "no", "off")


def coerce(text: str, kind: str, name: str) -> Any:
    """A GraphInput's default (the text typed in its form) as a value of its declared type."""
    where = f"GraphInput {name!r}"
    if kind == "string":
        return text
    stripped = text.strip()
    if kind in ("number", "integer"):
        try:
            number = float(stripped)
        except ValueError:
            raise NodeError(f"{where}: 'default' {text!r} is not a number; type a {kind} such as "
                            f"{'3' if kind == 'integer' else '0.5'}") from None
        if number != number or number in (float("inf"), float("-inf")):
            raise NodeError(f"{where}: 'default' must be a finite number, not {text!r}")
        if kind == "number":
            return number
        if not number.is_integer():
            raise NodeError(f"{where}: 'default' {text!r} is not a whole number; type an integer such as 3")
        return int(number)
    if kind == "boolean":
        if stripped.lower() in TRUE:
            return True
        if stripped.lower() in FALSE:
            return False
        raise NodeError(f"{where}: 'default' {text!r} is not true or false")
    # json
    try:
        return json.loads(stripped, parse_constant=_no_constant)
    except (ValueError, RecursionError) as exc:
        raise NodeError(f"{where}: 'default' is not valid JSON ({exc}); for example "
                        '[1, 2, 3] or {"k": 1}') from None


def _no_constant(word: str):
    raise ValueError(f"{word} is not allowed")


@register
class GraphInput(LibraryNode):
    type = "GraphInput"
    category = "IO"
    description = "One named input of a graph used as a function; its value comes from 'default'."
    details = (
        "Marks a value the graph takes in, under 'name'. When CodefyUI serves a graph as a "
        "function, a caller sends that value; on this server the value always comes from the "
        "node's own 'default' param, read as 'type': string (as typed), number (0.5), integer "
        "(3), boolean (true/false), json ([1, 2] or {\"k\": 1}, parsed) or image (the name of "
        "a picture in My files, given out as an image). With 'required' on, an empty default "
        "stops the run with a message; with it off, an empty default gives nothing (no value). "
        "'description' is a note for whoever uses the graph."
    )
    outputs = (Port("value", "ANY"),)
    params = (
        Param("name", "string", "input", "The input's name, as a caller would send it"),
        Param("type", "select", "string", "How 'default' is read", options=TYPES),
        Param("required", "bool", True, "An empty default is an error (on) or no value (off)"),
        Param("default", "string", "", "The value: text read as 'type'; for image, a file in My files"),
        Param("description", "string", "", "What the input is for"),
    )
    cacheable = False  # an image default is read from My files, which can change

    def run(self, ctx, params):
        text, kind, name = params["default"], params["type"], params["name"]
        empty = text == "" if kind == "string" else not text.strip()
        if empty:
            if params["required"]:
                raise NodeError(f"GraphInput {name!r} is required but its 'default' is empty; "
                                f"type a value ({kind}) in 'default', or turn 'required' off")
            return {"value": None}
        if kind == "image":
            return {"value": self._image(ctx, text.strip(), name)}
        return {"value": coerce(text, kind, name)}

    @staticmethod
    def _image(ctx, file_name: str, name: str):
        from PIL import Image, UnidentifiedImageError

        path = ctx.user_file(file_name, "default")  # refuses a name that is no file of My files
        try:
            with Image.open(path) as image:
                ctx.check_size(image.width * image.height * 4, f"GraphInput {name!r} image")
                picture = image.convert("RGB")
        except (UnidentifiedImageError, OSError, Image.DecompressionBombError):
            raise NodeError(f"GraphInput {name!r}: {file_name!r} is not a picture this server "
                            "can read (use PNG, JPEG, BMP or GIF)") from None
        return png_of(picture, file_name)


@register
class GraphOutput(LibraryNode):
    type = "GraphOutput"
    category = "IO"
    description = "One named output of a graph used as a function: what the graph returns."
    details = (
        "Marks the value wired into 'value' as the graph's result, under 'name'. It passes "
        "nothing on; the Inspector shows what it received, which is what the run returned "
        "under that name. 'description' is a note for whoever uses the graph."
    )
    inputs = (Port("value", "ANY"),)
    params = (
        Param("name", "string", "output", "The output's name, as a caller would receive it"),
        Param("description", "string", "", "What the output is"),
    )

    def run(self, ctx, params, value):
        ctx.capture("value", value)
        return {}
