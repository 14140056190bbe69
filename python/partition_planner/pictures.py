"""Writing a picture the native renderer made: one file, or for Model Explorer a directory of
overlays (docs/pictures.md)."""

from __future__ import annotations

import json
import pathlib


def write_picture(picture: str, path, format: str) -> None:
    """``picture`` as ``_native.render`` returns it for ``format``, written at ``path``: the text
    itself, or for ``model-explorer`` a JSON object of file name to content, written into the
    directory ``path``."""
    path = pathlib.Path(path)
    if format == "model-explorer":
        path.mkdir(parents=True, exist_ok=True)
        for name, text in json.loads(picture).items():
            (path / name).write_text(text, encoding="utf-8")
    else:
        path.write_text(picture, encoding="utf-8")
