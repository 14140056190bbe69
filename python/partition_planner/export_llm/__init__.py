"""ExecuTorch's ``export_llm`` with the Core ML partitioner replaced by ``PlannedCoreMLPartitioner``:
``python -m partition_planner.export_llm`` (``cli.py`` says how), or, from code,
``partition_planner.export_llm(config, **planner_options)`` (this package is callable).

- ``options.py``: the ``planner.*`` keys and their checks;
- ``config.py``: the ``LlmConfig`` composed as export_llm composes it;
- ``hook.py``: the drop-in put in place of the stock partitioner inside executorch's pipeline;
- ``cli.py``: the command line;
- ``results.py``: the plan files beside the ``.pte`` and the summary.
"""

from __future__ import annotations

import sys
import time
import types
from typing import Any

from .cli import main, split_arguments
from .config import llm_config
from .hook import Run, planned_partitioner
from .options import PLANNER_KEYS, ExportLlmError, PlannerOptions
from .results import Exported, finish


def export_llm(config: Any, **planner_options: Any) -> Exported:
    """Runs executorch's export_llm pipeline on ``config`` with the planner (see the module doc).
    ``planner_options``: ``strategy``, ``buffer_strategies`` (a mapping), ``take_over_mutable_buffer``,
    ``cost`` (a mapping), ``compare_with_stock``, ``check_conversion``, ``verify_conversion`` and the
    chunking keys of ``PLANNER_KEYS``. Raises ``ExportLlmError`` on bad input, before anything is
    written."""
    section, composed = llm_config(config)
    run = Run(PlannerOptions.from_mapping({**section, **planner_options}))
    start = time.perf_counter()
    with planned_partitioner(run):
        from executorch.examples.models.llama import export_llama_lib as lib

        lib.export_llama(composed)  # the wrapper checks the config first
    return finish(run, time.perf_counter() - start)


class _CallableModule(types.ModuleType):
    """``partition_planner.export_llm`` is both this module (``python -m``) and, called, the
    Python entry point ``export_llm(config, **planner_options)``."""

    def __call__(self, config: Any, **planner_options: Any) -> Exported:
        return export_llm(config, **planner_options)


sys.modules[__name__].__class__ = _CallableModule

__all__ = ["PLANNER_KEYS", "ExportLlmError", "Exported", "PlannerOptions", "export_llm", "main", "split_arguments"]
