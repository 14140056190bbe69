"""What one planned export_llm run wrote and decided: the plan files beside the ``.pte`` and the
one-screen summary."""

from __future__ import annotations

import dataclasses
import json
import os
from collections import Counter

from .hook import Run, executorch_version
from .options import ExportLlmError

@dataclasses.dataclass
class Exported:
    """What one planned export_llm run wrote and decided."""

    pte: str
    plans: list[dict]
    reports: list[str]
    plan_files: list[str]
    planning_seconds: float
    total_seconds: float
    executorch: str

    def summary(self) -> str:
        return _summary(self)


def finish(run: Run, seconds: float) -> Exported:
    version = executorch_version()
    if not run.partitioners:
        if run.pte and os.path.exists(run.pte):
            os.remove(run.pte)  # stock's: never leave it for the planner's
        raise ExportLlmError(
            f"executorch {version}: the export did not build its Core ML partitioner through "
            "get_coreml_partitioner, so the planner was not used; the .pte it wrote was removed"
        )
    if not run.pte or not os.path.exists(run.pte):
        raise ExportLlmError(
            f"executorch {version}'s export_llm wrote no .pte (it logs why; a missing export.output_dir is a common cause)"
        )
    stem = run.pte[: -len(".pte")] if run.pte.endswith(".pte") else run.pte
    plans = [p for part in run.partitioners for p in part.plans]
    reports = [r for part in run.partitioners for r in part.reports()]
    files = []
    for k, (plan, report) in enumerate(zip(plans, reports)):
        suffix = "" if len(plans) == 1 else f".{k + 1}"
        plan_path, text_path = f"{stem}.plan{suffix}.json", f"{stem}.plan{suffix}.txt"
        with open(plan_path, "w") as f:
            json.dump(plan, f, indent=1)
        with open(text_path, "w") as f:
            f.write(report)
        files += [plan_path, text_path]
    planning = sum(sum(part.partition_seconds) for part in run.partitioners)
    return Exported(run.pte, plans, reports, files, planning, seconds, version)


def _summary(e: Exported) -> str:
    lines = [f"partition_planner.export_llm (executorch {e.executorch}): wrote {e.pte}"]
    lines.append("  beside it: " + ", ".join(os.path.basename(f) for f in e.plan_files))
    for k, plan in enumerate(e.plans):
        stats, options = plan["stats"], plan["options"]
        label = "" if len(e.plans) == 1 else f" {k + 1}"
        lines.append(
            f"  plan{label}: {stats['partitions']} Core ML partition(s), {stats['states']} state(s) "
            f"(take_over_mutable_buffer={str(options['take_over_mutable_buffer']).lower()}, "
            f"{options.get('minimum_deployment_target') or 'no target'})"
        )
        strategies = Counter(b["strategy"] for b in plan["buffers"])
        if strategies:
            lines.append("  mutable buffers: " + ", ".join(f"{n} {s}" for s, n in sorted(strategies.items())))
        else:
            lines.append("  mutable buffers: none")
        broken = [x for x in plan["explanations"] if x["scope"] == "stock" and x.get("kind") == "violation"]
        stock = f"  stock proposal ({stats.get('stock_proposal')}): {stats['stock_partitions']} partition(s)"
        if broken:
            rules = Counter(x["rule"] for x in broken)
            lines.append(stock + "; it would break " + ", ".join(f"{r} x{n}" for r, n in sorted(rules.items())))
            lines.append(f"    e.g. {broken[0]['message']}")
        else:
            lines.append(stock + "; it would break no rule")
    lines.append(f"  planning: {e.planning_seconds * 1e3:.0f} ms of the export's {e.total_seconds:.1f} s")
    return "\n".join(lines)
