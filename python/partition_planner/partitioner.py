"""``PlannedCoreMLPartitioner``: ``CoreMLPartitioner`` with the stock tagging replaced by a plan.

    to_edge_transform_and_lower(ep, partitioner=[PlannedCoreMLPartitioner(compile_specs=specs,
                                                 take_over_mutable_buffer=False)])
"""

from __future__ import annotations

import json
import logging
from typing import Dict, List, Mapping, Optional

from executorch.backends.apple.coreml.partition import CoreMLPartitioner
from executorch.exir.backend.partitioner import PartitionResult

from . import _native
from .apply import apply_plan
from .export import export_graph

logger = logging.getLogger(__name__)


class PlannedCoreMLPartitioner(CoreMLPartitioner):
    """Takes ``CoreMLPartitioner``'s arguments, plus:

    - ``strategy``: ``"auto"`` (default), ``"state"``, ``"cpu"`` or ``"io"`` for every mutable buffer;
    - ``buffer_strategies``: ``{buffer name or placeholder name: strategy}`` for single buffers;
    - ``cost``: the cost constants ``auto`` weighs plans by, any of ``call_overhead_us``,
      ``bytes_per_us`` and ``cpu_op_us`` (docs/cost.md); the rest keep their defaults;
    - ``log_explanations``: log each decision and what the stock proposal broke (default True).

    After ``partition`` the plan is in ``last_plan`` (one per call in ``plans``), its findings in
    ``explanations()`` and the text report in ``report()``.
    """

    def __init__(
        self,
        *args,
        strategy: str = "auto",
        buffer_strategies: Optional[Dict[str, str]] = None,
        cost: Optional[Mapping[str, float]] = None,
        log_explanations: bool = True,
        **kwargs,
    ) -> None:
        super().__init__(*args, **kwargs)
        self.strategy = strategy
        self.buffer_strategies = dict(buffer_strategies or {})
        self.cost = dict(cost or {})
        # Refuse an unknown constant or an unusable value now, not at lowering time.
        self.cost_model = json.loads(_native.cost_model(json.dumps(self.cost)))
        self.log_explanations = log_explanations
        self.plans: List[dict] = []
        # What the last plan was made from, to render its text report on request.
        self._last_input: Optional[tuple] = None

    def _overrides(self) -> str:
        strategies = [self.strategy] + [f"{b}={s}" for b, s in self.buffer_strategies.items()]
        return json.dumps({"strategies": strategies, "cost": self.cost})

    def partition(self, exported_program) -> PartitionResult:
        # The stock capability partitioning tags the graph; the plan starts from it and replaces it.
        stock = super().partition(exported_program)
        program = stock.tagged_exported_program
        # Planning reads no weight values: skip hashing them (manifest() on an export_graph
        # document with digests is what a compiled-model cache wants).
        graph = json.dumps(export_graph(program, self, digests=False))
        overrides = self._overrides()
        plan = json.loads(_native.plan(graph, overrides))
        apply_plan(program, plan)
        self.plans.append(plan)
        self._last_input = (graph, overrides)
        if self.log_explanations:
            for e in plan["explanations"]:
                logger.info("[%s] %s%s", e["rule"], "stock proposal: " if e["scope"] == "stock" else "", e["message"])
        tags = {p["tag"]: self.delegation_spec for p in plan["partitions"]}
        return PartitionResult(tagged_exported_program=program, partition_tags=tags)

    @property
    def last_plan(self) -> Optional[dict]:
        return self.plans[-1] if self.plans else None

    def explanations(self) -> List[dict]:
        """Every finding of the last plan: decisions, costs, and what the stock proposal broke."""
        return list(self.last_plan["explanations"]) if self.last_plan else []

    def report(self) -> str:
        """The last plan as the text report a person reads (planned again: milliseconds)."""
        return _native.plan_text(*self._last_input) if self._last_input else ""
