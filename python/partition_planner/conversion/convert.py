"""Converting a program the way ``CoreMLBackend.preprocess`` does, without loading or saving the
model: ``CoreMLBackend._convert_to_mlmodel`` with ``skip_model_load=True`` (compile specs, target,
precision, compute units, pass pipeline, enumerated shapes and quantization all as in lowering).
That is what verification converts.

A probe asks less: ``frontend_failure`` runs coremltools' torch frontend alone, which turns each op
into MIL ops and infers their types (where every converter refusal seen in executorch's operator
and model suites is raised), and none of the pass pipeline or the backend. What those check is a
whole program's (a rank-6 tensor is rewritten away by passes in context, and refused by the
backend only where it remains), so a probe that ran them would judge its own boundary."""

from __future__ import annotations

import contextlib
import functools
import io
import logging
import traceback
from collections.abc import Sequence
from typing import NamedTuple

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


class Failure(NamedTuple):
    """Where coremltools' frontend refused a program."""

    # The converter's first error line (``error_line``).
    error: str
    # The program's node being converted when it failed, or None when it failed elsewhere.
    node: str | None
    # Raised while the program's inputs were read: their sizes, dtypes or kinds, nothing an op does.
    at_boundary: bool


# Where coremltools reads an EXIR program's inputs and constants: a failure raised there is about
# the program's boundary.
_BOUNDARY_FILES = ("frontend/torch/exir_utils.py",)


def _located(error: BaseException) -> tuple[str | None, bool]:
    """The node ``convert_nodes`` was converting when ``error`` was raised (the outermost, for an
    op with blocks of its own), and whether it was raised while reading the program's inputs."""
    node, at_boundary = None, False
    tb = error.__traceback__
    while tb is not None:
        frame = tb.tb_frame
        if node is None and frame.f_code.co_name == "convert_nodes":
            node = getattr(frame.f_locals.get("node"), "name", None)
        if frame.f_code.co_filename.endswith(_BOUNDARY_FILES):
            at_boundary = True
        tb = tb.tb_next
    return node, at_boundary and node is None


def frontend_failure(program, compile_specs: Sequence) -> Failure | None:
    """None when coremltools' torch frontend turns ``program`` into MIL, for the target and precision
    of ``compile_specs`` (executorch's own op converters registered, as in lowering); otherwise
    where and why it failed. An error executorch's backend gives as guidance is raised."""
    import coremltools as ct
    from coremltools.converters.mil.frontend.torch.load import load
    from executorch.backends.apple.coreml.compiler import CoreMLBackend  # registers its converters

    specs = list(compile_specs)
    target = CoreMLBackend.min_deployment_target_from_compile_specs(specs)
    # As ct.convert for an ML program: iOS15 when no target is given; fp16 inputs and outputs by
    # default from iOS16 when computing in fp16.
    version = target.value if target is not None else ct.target.iOS15.value
    fp16 = CoreMLBackend.model_compute_precision_from_compile_specs(specs) == ct.precision.FLOAT16
    try:
        with _quietly():
            load(program, inputs=None, specification_version=version, use_default_fp16_io=fp16 and version >= ct.target.iOS16.value, states=[])
    except Exception as error:  # every converter failure is a finding, whatever its type
        if _is_guidance(error):
            raise
        return Failure(error_line(error), *_located(error))
    return None
