"""Converting a program the way ``CoreMLBackend.preprocess`` does, without loading or saving the
model: ``CoreMLBackend._convert_to_mlmodel`` with ``skip_model_load=True`` (compile specs, target,
precision, compute units, pass pipeline, enumerated shapes and quantization all as in lowering)."""

from __future__ import annotations

import contextlib
import functools
import io
import logging
import traceback
from collections.abc import Sequence

from .cache import installed_versions


@functools.lru_cache(maxsize=None)
def converter_name() -> str:
    version = installed_versions()["coremltools"]  # read once a process, with the cache's key
    return "coremltools" if version == "none" else f"coremltools {version}"


def error_line(error: BaseException) -> str:
    """The converter's first error line, its exception type first. An exception without a message
    (coremltools asserts) is named by the place that raised it."""
    text = str(error).strip()
    first = text.splitlines()[0].strip() if text else ""
    if not first:
        frames = traceback.extract_tb(error.__traceback__)
        if frames:
            last = frames[-1]
            where = last.filename.split("site-packages/")[-1]
            first = f"raised in {last.name} ({where}:{last.lineno})"
    line = f"{type(error).__name__}: {first}" if first else type(error).__name__
    return line if len(line) <= 300 else line[:297] + "..."


class _NoCollection:
    @staticmethod
    def collect(*args, **kwargs) -> int:
        return 0


@contextlib.contextmanager
def _quietly():
    """Without the converter's progress bars and per-op error logs, and without the full garbage
    collection ``ct.convert`` ends with: in a process holding a model that collection is ten times
    the conversion of one node (0.4 s against 0.04 s), and it changes no verdict."""
    from coremltools.converters import _converters_entry as entry

    saved_gc = entry.gc
    logger = logging.getLogger("coremltools")
    saved_disabled = logger.disabled
    entry.gc = _NoCollection
    logger.disabled = True
    try:
        with contextlib.redirect_stderr(io.StringIO()):
            yield
    finally:
        entry.gc = saved_gc
        logger.disabled = saved_disabled


def _is_guidance(error: BaseException) -> bool:
    """Whether executorch's Core ML backend turned the converter's error into guidance for the
    user (``torch_ops._raise_with_executorch_hint``: a quantization that needs iOS18 asks for
    ``minimum_deployment_target``). That is a setting to change, not an op to route around."""
    try:
        from executorch.backends.apple.coreml.compiler import torch_ops
    except ImportError:
        return False
    hint = getattr(torch_ops, "_IOS18_QUANT_HINT", None)
    return isinstance(hint, str) and bool(hint) and hint in str(error)


def convert(program, compile_specs: Sequence) -> str | None:
    """None when coremltools converts ``program``; its first error line when it does not. An error
    executorch's backend gives as guidance to the user is raised, as lowering would raise it."""
    from executorch.backends.apple.coreml.compiler import CoreMLBackend

    try:
        with _quietly():
            CoreMLBackend._convert_to_mlmodel(program, list(compile_specs), skip_model_load=True)
    except Exception as error:  # every other converter failure is a verdict, whatever its type
        if _is_guidance(error):
            raise
        return error_line(error)
    return None
