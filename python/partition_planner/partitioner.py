"""``PlannedCoreMLPartitioner``: ``CoreMLPartitioner`` with the stock tagging replaced by a plan.

    to_edge_transform_and_lower(ep, partitioner=[PlannedCoreMLPartitioner(compile_specs=specs,
                                                 take_over_mutable_buffer=False)])
"""

from __future__ import annotations

import functools
import json
import logging
import sys
import time
import warnings
from collections.abc import Iterable, Mapping, Sequence

from executorch.backends.apple.coreml.partition import CoreMLPartitioner
from executorch.backends.apple.coreml.partition import coreml_partitioner as _stock_module
from executorch.exir.backend.partitioner import PartitionResult

from . import _native
from .apply import apply_tags
from .conversion import VERIFICATION, ConversionProbes, Verdict, failing_ops
from .conversion.convert import converter_name
from .conversion.verdict import readable_call
from .export import export_graph_text, target_name

logger = logging.getLogger(__name__)

# What CoreMLPartitioner.partition() logs, said through its own module's logger (executorch's tests
# and users' log configuration listen there), word for word.
_stock_logger = _stock_module.logger
_DEPRECATION_WARNING = (
    "\nDEPRECATION WARNING: You are using the deprecated 'to_edge() + to_backend()' workflow. "
    "This may result in decreased performance because ExecuTorch decomposes ops (e.g., SDPA) "
    "that CoreML has optimized implementations for. "
    "Please consider migrating to 'to_edge_transform_and_lower()' for better performance. "
    "See: https://docs.pytorch.org/executorch/main/backends/coreml/coreml-overview.html#using-the-core-ml-backend"
)
_TAKE_OVER_INFO = (
    "Core ML partitioner will take over torch mutable buffer as Core ML state, "
    "so if your model contains mutable buffer, "
    "then you will need MacOS15+/iOS18+ to execute. "
    "If you want your mutable buffer model to be compatible with older OS, "
    "then please set `take_over_mutable_buffer=False`"
)


def _called_from_to_backend() -> bool:
    """``CoreMLPartitioner._check_if_called_from_to_backend``'s decision (the deprecated
    ``to_edge() + to_backend()`` workflow: a ``to_backend`` of exir's program/_program.py on the
    stack, and no ``to_edge_transform_and_lower``), made by walking the frames' code objects. The
    stock check calls ``inspect.stack()``, which reads every frame's source: a quarter to half a
    millisecond a call, more than a small program's whole plan."""
    frame = sys._getframe(1)
    called_from_to_backend = False
    while frame is not None:
        code = frame.f_code
        if code.co_name == "to_edge_transform_and_lower":
            return False
        if code.co_name == "to_backend" and "program/_program.py" in code.co_filename:
            called_from_to_backend = True
        frame = frame.f_back
    return called_from_to_backend


def planner_overrides(
    strategy: str, buffer_strategies: Mapping[str, str], cost: Mapping[str, float], options: dict | None = None
) -> dict:
    """The native planner's overrides: ``strategy`` for every buffer, then ``BUFFER=STRATEGY`` for
    each single one (later wins), the cost constants, and ``options`` replacing the document's."""
    overrides = {"strategies": [strategy] + [f"{b}={s}" for b, s in buffer_strategies.items()], "cost": dict(cost)}
    if options:
        overrides["options"] = options
    return overrides


def chunking_options(
    max_weight_bytes: int | str | None = None,
    max_ops: int | None = None,
    cut_after: Sequence[str] = (),
    cut_before: Sequence[str] = (),
) -> dict:
    """The planner options that cut delegates (docs/chunks.md), those given only. A single pattern
    string is taken as a list of one."""
    options: dict = {}
    if max_weight_bytes is not None:
        options["max_weight_bytes"] = max_weight_bytes
    if max_ops is not None:
        options["max_ops"] = max_ops
    for key, patterns in (("cut_after", cut_after), ("cut_before", cut_before)):
        if isinstance(patterns, str):
            patterns = [patterns]
        if patterns:
            options[key] = list(patterns)
    return options


class StockMismatch(ValueError):
    """``compare_with_stock``: the real ``CoreMLPartitioner.partition()`` tagged a node otherwise
    than the stock proposal reproduced in Rust (tags compared up to renaming)."""

    def __init__(self, node: str, stock_tag: str | None, reproduced_tag: str | None, detail: str = ""):
        self.node = node
        self.stock_tag = stock_tag
        self.reproduced_tag = reproduced_tag
        super().__init__(
            f"the reproduced stock proposal differs from CoreMLPartitioner.partition() at node {node!r}: "
            f"stock tags it {stock_tag!r}, the reproduction {reproduced_tag!r}{detail}"
        )


def first_tag_difference(
    stock: Mapping[str, str | None], reproduced: Mapping[str, str | None], names: Iterable[str]
) -> tuple[str, str | None, str | None, str] | None:
    """The first node of ``names`` (in that order) whose tag differs between two taggings compared up
    to renaming: one bijection between the tag names of ``stock`` and those of ``reproduced`` must map
    every node's tag to its tag there (untagged to untagged). Returns ``(node, stock tag, reproduced
    tag, detail)`` or ``None`` when they agree. A node missing from ``reproduced`` differs."""
    forward: dict[str, str] = {}
    backward: dict[str, str] = {}
    for name in names:
        if name not in reproduced:
            return name, stock.get(name), None, " (the reproduction has no entry for it)"
        a, b = stock.get(name), reproduced[name]
        if a is None and b is None:
            continue
        if a is None or b is None:
            return name, a, b, ""
        if forward.get(a, b) != b:
            return name, a, b, f" (stock's {a!r} matched the reproduction's {forward[a]!r} on earlier nodes)"
        if backward.get(b, a) != a:
            return name, a, b, f" (the reproduction's {b!r} matched stock's {backward[b]!r} on earlier nodes)"
        forward[a], backward[b] = b, a
    return None


@functools.lru_cache(maxsize=None)
def _decomposable_ops() -> frozenset:
    """The ops executorch decomposes unless a partitioner keeps them whole (its default
    decomposition table, milliseconds to build: once a process)."""
    from executorch.exir.tracer import _default_decomposition_table

    return frozenset(_default_decomposition_table())


def _is_decomposable(target) -> bool:
    """Whether ``target`` (an op, or the edge op wrapping one) is one executorch decomposes unless a
    partitioner keeps it whole: in an edge program, an op kept whole for Core ML."""
    decomposable = _decomposable_ops()
    try:
        return target in decomposable or getattr(target, "_op", None) in decomposable
    except TypeError:  # an unhashable target
        return False


class _Planned:
    """One ``partition()``'s plan: the tags it applies, and the plan itself as the planner keeps it
    (``_native.Plan``), from which its ``plan@1`` document, text report and pictures are written
    when first asked for."""

    __slots__ = ("native", "node_tags", "partition_tags", "_plan")

    def __init__(self, native, node_tags: dict[str, str | None], partition_tags: list[str]) -> None:
        self.native, self.node_tags, self.partition_tags = native, node_tags, partition_tags
        self._plan: dict | None = None

    @classmethod
    def of(cls, graph: str, overrides: str | None) -> _Planned:
        planned = cls(*_native.plan_with_tags(graph, overrides))
        # What the CLI warns of (a value whose size is unknown, left out of budgets and weights),
        # said where the caller lowers.
        for warning in planned.native.warnings():
            warnings.warn(f"partition-planner: {warning}", UserWarning, stacklevel=2)
        return planned

    @property
    def plan(self) -> dict:
        if self._plan is None:
            self._plan = json.loads(self.native.json())
        return self._plan


class ConversionVerificationError(RuntimeError):
    """``verify_conversion``: planned partitions still fail to convert after the bound on
    verification rounds; names each partition and the converter's error."""


class PlannedCoreMLPartitioner(CoreMLPartitioner):
    """Takes ``CoreMLPartitioner``'s arguments, plus:

    - ``strategy``: ``"auto"`` (default), ``"state"``, ``"cpu"`` or ``"io"`` for every mutable buffer;
    - ``buffer_strategies``: ``{buffer name or placeholder name: strategy}`` for single buffers;
    - ``cost``: the cost constants ``auto`` weighs plans by, any of ``call_overhead_us``,
      ``bytes_per_us`` and ``cpu_op_us`` (docs/cost.md); the rest keep their defaults;
    - ``max_weight_bytes``: at most this many bytes of constants in each Core ML delegate (an int,
      or a string such as ``"2GiB"`` or ``"700MB"``); a constant several delegates read counts in
      each (docs/chunks.md);
    - ``max_ops``: at most this many ops in each delegate;
    - ``cut_after`` / ``cut_before``: patterns over node names or module paths (``"layers.*"``
      cuts at every transformer block); no delegate spans such a cut;
    - ``log_explanations``: log each decision and what the stock proposal broke (default True);
    - ``compare_with_stock``: also run the real stock pass (``CoreMLPartitioner.partition()``, with
      torch.fx's ``CapabilityBasedPartitioner``: seconds on an LLM) and raise ``StockMismatch``,
      naming the first node, if its tags differ (up to renaming) from the stock proposal the planner
      reproduces and compares its plan with (default False);
    - ``check_conversion``: before planning, convert each distinct signature of a node the support
      check accepts with coremltools' frontend, all side by side, and keep on CPU what it refuses
      (default True; verdicts are cached on disk, docs/conversion.md);
    - ``verify_conversion``: convert each planned partition before returning; a failing one is
      bisected to the op to blame, which is kept on CPU, and the program planned again, at most
      ``max_verification_rounds`` times (default False, 8 rounds).

    ``partition`` does not run the stock pass: it exports the untagged program (the op-support
    check is the Core ML backend's own, once per node), plans, and applies the plan. After it the
    plan is in ``last_plan`` (one per call in ``plans``), its findings in ``explanations()`` and the
    text report in ``report()``.
    """

    def __init__(
        self,
        *args,
        strategy: str = "auto",
        buffer_strategies: dict[str, str] | None = None,
        cost: Mapping[str, float] | None = None,
        max_weight_bytes: int | str | None = None,
        max_ops: int | None = None,
        cut_after: Sequence[str] = (),
        cut_before: Sequence[str] = (),
        log_explanations: bool = True,
        compare_with_stock: bool = False,
        check_conversion: bool = True,
        verify_conversion: bool = False,
        max_verification_rounds: int = 8,
        **kwargs,
    ) -> None:
        super().__init__(*args, **kwargs)
        self.strategy = strategy
        self.buffer_strategies = dict(buffer_strategies or {})
        self.cost = dict(cost or {})
        self.chunking = chunking_options(max_weight_bytes, max_ops, cut_after, cut_before)
        # Refuse an unknown constant, strategy or an unusable value now, not at lowering time
        # (the defaults need no asking: a tenth of a small program's partition() when asked).
        if strategy != "auto" or self.buffer_strategies or self.cost or self.chunking:
            _native.validate_overrides(self._overrides())
        self.log_explanations = log_explanations
        self.compare_with_stock = compare_with_stock
        self.check_conversion = bool(check_conversion)
        self.verify_conversion = bool(verify_conversion)
        if isinstance(max_verification_rounds, bool) or not isinstance(max_verification_rounds, int) or max_verification_rounds < 1:
            raise ValueError(f"max_verification_rounds must be a whole number of at least 1, got {max_verification_rounds!r}")
        self.max_verification_rounds = max_verification_rounds
        self._probes: ConversionProbes | None = None
        # Ops stock keeps whole for Core ML that this partitioner let decompose: those the converter
        # refuses, with the verdict; those the plan leaves on CPU otherwise, with such a node.
        self.decomposed_for_conversion: dict = {}
        self.decomposed_for_cpu: dict = {}
        # ops_to_not_decompose's last answer, with the program it is for (executorch asks twice).
        self._kept_whole: tuple | None = None
        # Per partition(): what conversion checking did (signatures, probes run, partitions verified).
        self.conversion: list[dict] = []
        self._planned: list[_Planned] = []
        # Seconds each partition() took, export and apply included.
        self.partition_seconds: list[float] = []

    def _overrides(self) -> str:
        return json.dumps(planner_overrides(self.strategy, self.buffer_strategies, self.cost, self.chunking))

    def partition(self, exported_program) -> PartitionResult:
        start = time.perf_counter()
        if _called_from_to_backend():
            _stock_logger.warning(_DEPRECATION_WARNING)
        _stock_logger.info("CoreMLPartitioner::partition")
        program = exported_program
        # Tags from elsewhere would be taken for the stock proposal; the plan sets every node anyway.
        for node in program.graph.nodes:
            node.meta.pop("delegation_tag", None)
        # Planning reads no weight values: skip hashing them (manifest() on an export_graph
        # document with digests is what a compiled-model cache wants). With lower_full_graph an
        # unsupported op raises NotImplementedError here, from the backend's own check, as in stock.
        probes = self._conversion_probes() if self.check_conversion else None
        before = (probes.probed, probes.conversions, probes.seconds) if probes is not None else None
        graph = export_graph_text(
            program, self, digests=False, log_support=True, probes=probes, decomposed=self.decomposed_for_conversion
        )
        overrides = self._overrides()
        if self.compare_with_stock:
            self._compare_with_stock(program, graph, overrides)
        if self.take_over_mutable_buffer:
            _stock_logger.info(_TAKE_OVER_INFO)
        planned = _Planned.of(graph, overrides)
        conversion = {"checked": probes is not None}
        if probes is not None:
            conversion.update(
                signatures=probes.signatures,
                probed=probes.probed - before[0],
                conversions=probes.conversions - before[1],
                probe_seconds=probes.seconds - before[2],
            )
        if self.verify_conversion:
            graph, planned = self._verified(program, graph, planned, overrides, probes, conversion)
        self.conversion.append(conversion)
        apply_tags(program, planned.node_tags)
        self._planned.append(planned)
        if logger.isEnabledFor(logging.INFO):  # the plan's text is read only to be logged
            plan = planned.plan
            stats = plan["stats"]
            logger.info(
                "planned %d partition(s), %d state(s); the stock proposal (%s) has %d partition(s)",
                stats["partitions"], stats["states"], stats.get("stock_proposal"), stats["stock_partitions"],
            )
            if self.log_explanations:
                for e in plan["explanations"]:
                    logger.info("[%s] %s%s", e["rule"], "stock proposal: " if e["scope"] == "stock" else "", e["message"])
        tags = {tag: self.delegation_spec for tag in planned.partition_tags}
        self.partition_seconds.append(time.perf_counter() - start)
        return PartitionResult(tagged_exported_program=program, partition_tags=tags)

    def ops_to_not_decompose(self, ep):
        """Stock's list of ops kept whole for Core ML, less those the plan leaves a node of on CPU.

        Kept whole, an op outside core ATen has no kernel on CPU (``Missing out variants``, or
        executorch's last check: "was not decomposed or delegated"); decomposed, its parts run
        there. So the program as it stands is planned first (with its conversion verdicts, under
        ``check_conversion``), and every op of which that plan leaves a node on CPU (refused by the
        converter, or tied to what is) is let decompose, its parts planned again in
        ``partition()``. Only ops executorch would otherwise decompose are listed: listing any
        other keeps nothing whole and only makes that last check refuse it where it runs on CPU.
        executorch asks again of the same program, and of the lowered one: planned once."""
        ops, check_op_support = super().ops_to_not_decompose(ep)
        decomposable = _decomposable_ops()
        kept = [op for op in ops if op in decomposable]
        if not kept or ep.dialect == "EDGE":
            return kept, check_op_support
        if self._kept_whole is None or self._kept_whole[0] is not ep:
            self._kept_whole = (ep, self._kept_whole_after_planning(ep, kept))
        return self._kept_whole[1], check_op_support

    def _kept_whole_after_planning(self, ep, kept: list) -> list:
        probes = self._conversion_probes() if self.check_conversion else None
        graph = export_graph_text(ep, self, digests=False, probes=probes)
        _, node_tags, _ = _native.plan_with_tags(graph, self._overrides())
        kept_set = set(kept)
        left: dict = {}  # each kept op left on CPU, by the first such node
        for node in ep.graph.nodes:
            if node.op == "call_function" and node.target in kept_set and node_tags.get(node.name) is None:
                left.setdefault(node.target, node)
        refused = probes.refused if probes is not None else {}
        for op, node in left.items():
            verdict = next((v for n, v in refused.items() if n.target == op), None)
            if verdict is not None:
                if op not in self.decomposed_for_conversion:
                    self.decomposed_for_conversion[op] = verdict
                    logger.info(
                        "check_conversion: %s is decomposed rather than kept whole for Core ML: %s cannot convert %s: %s",
                        op, verdict.converter, verdict.call, verdict.error,
                    )
            elif op not in self.decomposed_for_cpu:
                self.decomposed_for_cpu[op] = node.name
                logger.info(
                    "%s is decomposed rather than kept whole for Core ML: the plan runs %s on CPU, where it has no kernel whole",
                    op, node.name,
                )
        return [op for op in kept if op not in left]

    def _conversion_probes(self) -> ConversionProbes:
        if self._probes is None:
            self._probes = ConversionProbes(self.delegation_spec.compile_specs, bool(self.take_over_constant_data))
        return self._probes

    def _verified(self, program, graph: str, planned: _Planned, overrides: str, probes, conversion: dict):
        """Converts each planned partition; while one fails, keeps the op bisection blames on CPU
        and plans again, at most ``max_verification_rounds`` times."""
        found: dict = {}
        converter = converter_name()
        conversion.update(verified_partitions=0, found_by_verification=[])
        for round_ in range(self.max_verification_rounds + 1):
            culprits = failing_ops(program, planned.node_tags, self.delegation_spec.compile_specs)
            conversion["verified_partitions"] += len(planned.partition_tags)
            if not culprits:
                return graph, planned
            if round_ == self.max_verification_rounds:
                failures = "; ".join(f"{c.partition}: {c.error}" for c in culprits)
                raise ConversionVerificationError(
                    f"planned partitions still fail to convert after {self.max_verification_rounds} "
                    f"verification round(s): {failures}"
                )
            for c in culprits:
                if _is_decomposable(c.node.target):
                    # Kept whole at this partitioner's request; on CPU there is no kernel for it.
                    raise ConversionVerificationError(
                        f"{c.partition} does not convert ({c.error}); bisection blames {c.node.name} "
                        f"({target_name(c.node)}), an op kept whole for Core ML that has no kernel on CPU. "
                        "With check_conversion on, an op the converter refuses is decomposed before planning"
                    )
                verdict = Verdict(False, VERIFICATION, converter, readable_call(c.node, target_name(c.node)), c.error)
                found[c.node] = verdict
                conversion["found_by_verification"].append(c.node.name)
                logger.info(
                    "verify_conversion: %s does not convert (%s); bisected to %s in %d conversion(s); planning again",
                    c.partition, c.error, c.node.name, c.conversions,
                )
            graph = export_graph_text(
                program, self, digests=False, probes=probes, found=found, decomposed=self.decomposed_for_conversion
            )
            planned = _Planned.of(graph, overrides)
        raise AssertionError("unreachable: the last round returns or raises")

    def _compare_with_stock(self, program, graph: str, overrides: str) -> None:
        """Runs the real stock pass on ``program`` (untagged, exported as ``graph``), compares its
        tags with the reproduction's, and clears them again."""
        CoreMLPartitioner.partition(self, program)
        nodes = list(program.graph.nodes)
        stock = {n.name: n.meta.pop("delegation_tag", None) for n in nodes}
        reproduced = json.loads(_native.check(graph, overrides, stock=True))["node_tags"]
        difference = first_tag_difference(stock, reproduced, (n.name for n in nodes))
        if difference is not None:
            raise StockMismatch(*difference)
        logger.info("compare_with_stock: the stock pass tags all %d nodes as reproduced", len(nodes))

    @functools.cached_property
    def cost_model(self) -> dict:
        """The cost constants ``auto`` weighs plans by: ``cost`` over the defaults (asked of the
        planner when first read; ``__init__`` has validated them)."""
        return json.loads(_native.cost_model(json.dumps(self.cost)))

    @property
    def plans(self) -> list[dict]:
        """Every ``partition()``'s plan (``plan@1``), in order."""
        return [planned.plan for planned in self._planned]

    @property
    def last_plan(self) -> dict | None:
        return self._planned[-1].plan if self._planned else None

    def explanations(self) -> list[dict]:
        """Every finding of the last plan: decisions, costs, and what the stock proposal broke."""
        return list(self.last_plan["explanations"]) if self.last_plan else []

    def report(self) -> str:
        """The last plan as the text report a person reads."""
        return self._planned[-1].native.text() if self._planned else ""

    def render(self, path, format: str = "html") -> None:
        """Draws the last plan beside the stock proposal at ``path``: ``html``, ``dot`` or
        ``model-explorer`` (a directory), as ``partition_planner.render``."""
        if not self._planned:
            raise RuntimeError("render() needs a plan: call partition() (or to_edge_transform_and_lower) first")
        from .pictures import write_picture

        write_picture(self._planned[-1].native.render(format), path, format)

    def reports(self) -> list[str]:
        """Every plan's text report, in the order of ``plans``."""
        return [planned.native.text() for planned in self._planned]
