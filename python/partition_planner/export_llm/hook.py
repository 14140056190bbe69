"""The hook into executorch's LLM export: within ``planned_partitioner``,
``export_llama_lib.get_coreml_partitioner`` returns a ``PlannedCoreMLPartitioner`` built like the
stock partitioner it would have returned, and ``export_llama`` records the ``.pte`` it wrote."""

from __future__ import annotations

import contextlib
import os
import sys
import types
from importlib import metadata
from collections.abc import Iterator
from typing import Any

from .config import check_config
from .options import ExportLlmError, PlannerOptions

class Run:
    """The partitioners the hook built in one run, and the .pte export_llama reported."""

    def __init__(self, planner: PlannerOptions):
        self.planner = planner
        self.partitioners: list[Any] = []
        self.pte: str | None = None
        self.error: BaseException | None = None


def executorch_version() -> str:
    try:
        return metadata.version("executorch")
    except metadata.PackageNotFoundError:
        return "(not installed)"


def hook_module():
    """``export_llama_lib``, checked to build its Core ML partitioner through the module-level
    ``get_coreml_partitioner`` this entry point replaces (executorch 1.4 and 1.5 do)."""
    version = executorch_version()
    try:
        from executorch.examples.models.llama import export_llama_lib as lib
    except ImportError as e:
        raise ExportLlmError(f"executorch {version}: cannot import examples.models.llama.export_llama_lib ({e})") from None
    callers = [
        name
        for name, f in vars(lib).items()
        if isinstance(f, types.FunctionType) and "get_coreml_partitioner" in f.__code__.co_names
    ]
    if not callable(getattr(lib, "get_coreml_partitioner", None)) or not callers:
        raise ExportLlmError(
            f"executorch {version}: export_llama_lib no longer builds its Core ML partitioner through "
            "get_coreml_partitioner, the hook partition_planner.export_llm replaces; refusing to export "
            "(it never falls back to the stock partitioner). Use PlannedCoreMLPartitioner directly."
        )
    return lib


@contextlib.contextmanager
def planned_partitioner(run: Run) -> Iterator[None]:
    """Within: ``export_llama_lib.get_coreml_partitioner`` returns a ``PlannedCoreMLPartitioner``
    built like the stock partitioner it would have returned; ``export_llama`` records the .pte."""
    from executorch.backends.apple.coreml.partition import CoreMLPartitioner

    from ..partitioner import PlannedCoreMLPartitioner

    lib = hook_module()
    original = lib.get_coreml_partitioner
    original_export = lib.export_llama

    def get_coreml_partitioner(*args, **kwargs):
        stock = original(*args, **kwargs)  # executorch's own checks and compile specs
        if not isinstance(stock, CoreMLPartitioner):
            raise ExportLlmError(
                f"executorch {executorch_version()}: get_coreml_partitioner returned "
                f"{type(stock).__name__}, not a CoreMLPartitioner; refusing to export"
            )
        planned = PlannedCoreMLPartitioner(
            compile_specs=stock.delegation_spec.compile_specs,
            take_over_mutable_buffer=run.planner.take_over_mutable_buffer,
            take_over_constant_data=stock.take_over_constant_data,
            skip_ops_for_coreml_delegation=list(stock.skip_ops_for_coreml_delegation or []),
            lower_full_graph=stock.lower_full_graph,
            **run.planner.partitioner_kwargs(),
        )
        run.partitioners.append(planned)
        return planned

    def export_llama(export_options, *args, **kwargs):
        try:
            check_config(export_options, run.planner)
            # export_llm logs an error and writes nothing when the directory is missing.
            output_dir = getattr(getattr(export_options, "export", None), "output_dir", None)
            if output_dir:
                os.makedirs(output_dir, exist_ok=True)
            run.pte = original_export(export_options, *args, **kwargs)
            return run.pte
        except BaseException as e:
            run.error = e
            raise

    lib.get_coreml_partitioner = get_coreml_partitioner
    lib.export_llama = export_llama
    entry = sys.modules.get("executorch.extension.llm.export.export_llm")
    if entry is not None:
        entry.export_llama = export_llama
    try:
        yield
    finally:
        lib.get_coreml_partitioner = original
        lib.export_llama = original_export
        if entry is not None:
            entry.export_llama = original_export
