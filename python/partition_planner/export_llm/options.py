"""The ``planner.*`` options of the planned export_llm: what each key means, how a value from the
command line, a config file's ``planner:`` section or a keyword argument is checked, and what they
become for ``PlannedCoreMLPartitioner``."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from typing import Any

PLANNER_KEYS = {
    "strategy": "auto, state, cpu or io for every mutable buffer (default auto)",
    "buffer_strategies": "BUFFER=STRATEGY for one buffer (repeatable), or a mapping {BUFFER: STRATEGY}",
    "take_over_mutable_buffer": "true lets Core ML own mutable buffers as states (iOS18+; default false, as export_llm)",
    "cost": "cost constants auto weighs plans by: planner.cost.NAME=VALUE or a mapping (docs/cost.md)",
    "compare_with_stock": "also run the real stock pass and stop if the reproduced stock proposal differs (default false)",
    "check_conversion": "probe coremltools with each distinct op signature before planning and keep what it refuses on CPU (default true, cached; docs/conversion.md)",
    "verify_conversion": "convert each planned partition, bisect a failing one to the op to blame and plan again (default false)",
    "max_weight_bytes": "at most this many bytes of constants in each Core ML delegate, e.g. 2GiB (docs/chunks.md)",
    "max_ops": "at most this many ops in each Core ML delegate",
    "cut_after": "no delegate spans the end of what PATTERN matches (node name or module path, e.g. layers.*); a list or one",
    "cut_before": "no delegate spans the start of what PATTERN matches; a list or one",
}


class ExportLlmError(Exception):
    """Input the planned export_llm refuses, or an executorch it cannot hook into. Raised before
    the pipeline writes anything."""


@dataclasses.dataclass
class PlannerOptions:
    strategy: str = "auto"
    buffer_strategies: dict[str, str] = dataclasses.field(default_factory=dict)
    take_over_mutable_buffer: bool = False
    cost: dict[str, float] = dataclasses.field(default_factory=dict)
    compare_with_stock: bool = False
    check_conversion: bool = True
    verify_conversion: bool = False
    max_weight_bytes: Any | None = None
    max_ops: int | None = None
    cut_after: list[str] = dataclasses.field(default_factory=list)
    cut_before: list[str] = dataclasses.field(default_factory=list)

    @classmethod
    def from_mapping(cls, given: Mapping[str, Any], where: str = "planner") -> "PlannerOptions":
        options = cls()
        for key, value in given.items():
            options.set(str(key), value, where)
        return options

    def set(self, key: str, value: Any, where: str = "planner") -> None:
        """One ``planner.*`` key; ``key`` is what follows ``planner.``."""
        name = f"{where}.{key}"
        head, _, rest = key.partition(".")
        if head == "cost" and rest:
            self.cost[rest] = _number(value, name)
        elif key == "cost":
            if not isinstance(value, Mapping):
                raise ExportLlmError(f"{name} must be a mapping of cost constants, got {value!r}")
            for k, v in value.items():
                self.cost[str(k)] = _number(v, f"{name}.{k}")
        elif key == "strategy":
            self.strategy = _text(value, name)
        elif key == "buffer_strategies":
            if isinstance(value, Mapping):
                self.buffer_strategies.update({str(b): _text(s, f"{name}.{b}") for b, s in value.items()})
            elif isinstance(value, (list, tuple)):
                for item in value:
                    self.set(key, item, where)
            else:
                buffer, eq, strategy = _text(value, name).partition("=")
                if not eq or not buffer:
                    raise ExportLlmError(f"{name} takes BUFFER=STRATEGY or a mapping, got {value!r}")
                self.buffer_strategies[buffer] = strategy
        elif key == "max_weight_bytes":
            if isinstance(value, bool) or not isinstance(value, (int, str)):
                raise ExportLlmError(f"{name} takes a number of bytes or a size such as 2GiB, got {value!r}")
            self.max_weight_bytes = value
        elif key == "max_ops":
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ExportLlmError(f"{name} takes a whole number of ops, got {value!r}")
            self.max_ops = value
        elif key in ("cut_after", "cut_before"):
            patterns = value if isinstance(value, (list, tuple)) else [value]
            getattr(self, key).extend(_text(p, name) for p in patterns)
        elif key in ("take_over_mutable_buffer", "compare_with_stock", "check_conversion", "verify_conversion"):
            if not isinstance(value, bool):
                raise ExportLlmError(f"{name} must be true or false, got {value!r}")
            setattr(self, key, value)
        else:
            known = "\n".join(f"  {where}.{k}: {doc}" for k, doc in PLANNER_KEYS.items())
            raise ExportLlmError(f"unknown key {name}; the known {where}.* keys are:\n{known}")

    def overrides(self, target: str | None) -> dict:
        """The planner's overrides JSON for these options under ``target`` (``iOS18``...)."""
        from ..partitioner import chunking_options, planner_overrides

        options: dict[str, Any] = {"take_over_mutable_buffer": self.take_over_mutable_buffer}
        options.update(chunking_options(self.max_weight_bytes, self.max_ops, self.cut_after, self.cut_before))
        if target is not None:
            options["minimum_deployment_target"] = target
        return planner_overrides(self.strategy, self.buffer_strategies, self.cost, options)

    def validate(self, target: str | None) -> None:
        """Strategy spellings, cost constants, and no ``state`` the options forbid, checked by the
        native module before any export work."""
        from .. import _native

        try:
            _native.validate_overrides(json.dumps(self.overrides(target)))
        except ValueError as e:
            hint = ""
            if "NO_HIDDEN_STATE" in str(e):
                hint = "; planner.take_over_mutable_buffer=true allows states"
            elif "STATE_TARGET" in str(e):
                hint = "; backend.coreml.ios=18 allows states"
            raise ExportLlmError(f"planner options: {e}{hint}") from None

    def partitioner_kwargs(self) -> dict:
        return {
            "strategy": self.strategy,
            "buffer_strategies": dict(self.buffer_strategies),
            "cost": dict(self.cost),
            "compare_with_stock": self.compare_with_stock,
            "check_conversion": self.check_conversion,
            "verify_conversion": self.verify_conversion,
            "max_weight_bytes": self.max_weight_bytes,
            "max_ops": self.max_ops,
            "cut_after": list(self.cut_after),
            "cut_before": list(self.cut_before),
        }


def _number(value: Any, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ExportLlmError(f"{name} must be a number, got {value!r}")
    return float(value)


def _text(value: Any, name: str) -> str:
    if not isinstance(value, str):
        raise ExportLlmError(f"{name} must be a string, got {value!r}")
    return value
