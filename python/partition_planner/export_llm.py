"""ExecuTorch's ``export_llm`` with the Core ML partitioner replaced by ``PlannedCoreMLPartitioner``.

    python -m partition_planner.export_llm [--config FILE.yaml] [KEY=VALUE ...] [planner.KEY=VALUE ...]

Every argument but ``planner.*`` goes to executorch's own ``export_llm`` unchanged (its Hydra
``key=value`` overrides and its ``--config``); a ``planner:`` section of the config file is read
here and left out of what executorch sees. The pipeline is executorch's: only the partitioner that
``export_llama_lib.get_coreml_partitioner`` returns is swapped for the drop-in, built with that
partitioner's compile specs (target, precision, compute units, quantization) and options, except
``take_over_mutable_buffer``, which is ``planner.take_over_mutable_buffer`` (default false, as
export_llm). If that hook is missing in the installed executorch, nothing is exported.

Beside the ``.pte`` go ``NAME.plan.json`` (plan@1) and ``NAME.plan.txt`` (the text report), and a
one-screen summary is printed. From code: ``partition_planner.export_llm(config, **planner_options)``
(this module is callable), with ``config`` an ``LlmConfig``, a mapping or a YAML file's path.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import sys
import tempfile
import time
import types
from collections import Counter
from importlib import metadata
from typing import Any, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple

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
    buffer_strategies: Dict[str, str] = dataclasses.field(default_factory=dict)
    take_over_mutable_buffer: bool = False
    cost: Dict[str, float] = dataclasses.field(default_factory=dict)
    compare_with_stock: bool = False
    check_conversion: bool = True
    verify_conversion: bool = False
    max_weight_bytes: Optional[Any] = None
    max_ops: Optional[int] = None
    cut_after: List[str] = dataclasses.field(default_factory=list)
    cut_before: List[str] = dataclasses.field(default_factory=list)

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

    def overrides(self, target: Optional[str]) -> dict:
        """The planner's overrides JSON for these options under ``target`` (``iOS18``...)."""
        from .partitioner import chunking_options, planner_overrides

        options: Dict[str, Any] = {"take_over_mutable_buffer": self.take_over_mutable_buffer}
        options.update(chunking_options(self.max_weight_bytes, self.max_ops, self.cut_after, self.cut_before))
        if target is not None:
            options["minimum_deployment_target"] = target
        return planner_overrides(self.strategy, self.buffer_strategies, self.cost, options)

    def validate(self, target: Optional[str]) -> None:
        """Strategy spellings, cost constants, and no ``state`` the options forbid, checked by the
        native module before any export work."""
        from . import _native

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


@dataclasses.dataclass
class Exported:
    """What one planned export_llm run wrote and decided."""

    pte: str
    plans: List[dict]
    reports: List[str]
    plan_files: List[str]
    planning_seconds: float
    total_seconds: float
    executorch: str

    def summary(self) -> str:
        return _summary(self)


# ---- the hooks into executorch's pipeline ---------------------------------------------------


class _Run:
    """The partitioners the hook built in one run, and the .pte export_llama reported."""

    def __init__(self, planner: PlannerOptions):
        self.planner = planner
        self.partitioners: List[Any] = []
        self.pte: Optional[str] = None
        self.error: Optional[BaseException] = None


def _executorch_version() -> str:
    try:
        return metadata.version("executorch")
    except metadata.PackageNotFoundError:
        return "(not installed)"


def _hook_module():
    """``export_llama_lib``, checked to build its Core ML partitioner through the module-level
    ``get_coreml_partitioner`` this entry point replaces (executorch 1.4 and 1.5 do)."""
    version = _executorch_version()
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
def _planned_partitioner(run: _Run) -> Iterator[None]:
    """Within: ``export_llama_lib.get_coreml_partitioner`` returns a ``PlannedCoreMLPartitioner``
    built like the stock partitioner it would have returned; ``export_llama`` records the .pte."""
    from executorch.backends.apple.coreml.partition import CoreMLPartitioner

    from .partitioner import PlannedCoreMLPartitioner

    lib = _hook_module()
    original = lib.get_coreml_partitioner
    original_export = lib.export_llama

    def get_coreml_partitioner(*args, **kwargs):
        stock = original(*args, **kwargs)  # executorch's own checks and compile specs
        if not isinstance(stock, CoreMLPartitioner):
            raise ExportLlmError(
                f"executorch {_executorch_version()}: get_coreml_partitioner returned "
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
            _check_config(export_options, run.planner)
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


# ---- the configuration ----------------------------------------------------------------------


def _coreml_target(config: Any) -> Tuple[bool, Optional[str]]:
    backend = getattr(getattr(config, "backend", None), "coreml", None)
    if backend is None:
        return False, None
    ios = getattr(backend, "ios", None)
    return bool(getattr(backend, "enabled", False)), None if ios is None else f"iOS{ios}"


def _check_config(config: Any, planner: PlannerOptions) -> None:
    enabled, target = _coreml_target(config)
    if not enabled:
        raise ExportLlmError(
            "the config does not enable Core ML: partition_planner.export_llm plans the Core ML "
            "partitioner, so set backend.coreml.enabled=true (and backend.coreml.ios=18 for states)"
        )
    planner.validate(target)


def _load_yaml(path: str) -> dict:
    import yaml

    try:
        with open(path) as f:
            loaded = yaml.safe_load(f)
    except OSError as e:
        raise ExportLlmError(f"--config {path}: {e.strerror}") from None
    except yaml.YAMLError as e:
        raise ExportLlmError(f"--config {path}: not YAML: {e}") from None
    if loaded is None:
        return {}
    if not isinstance(loaded, dict):
        raise ExportLlmError(f"--config {path}: expected a mapping at the top level")
    return loaded


def _llm_config(given: Any) -> Tuple[dict, Any]:
    """``(its planner section, an LlmConfig)`` from what the Python entry point was given: an
    ``LlmConfig``, a mapping or a YAML file's path, composed onto ``LlmConfig``'s defaults as
    export_llm composes its config."""
    from omegaconf import DictConfig, OmegaConf

    from executorch.extension.llm.export.config.llm_config import LlmConfig

    if isinstance(given, LlmConfig):
        return {}, given
    if isinstance(given, (str, os.PathLike)):
        given = _load_yaml(os.fspath(given))
    if isinstance(given, DictConfig):
        given = OmegaConf.to_container(given)
    if not isinstance(given, Mapping):
        raise ExportLlmError(f"config must be an LlmConfig, a mapping or a YAML path, got {type(given).__name__}")
    return dict(given.get("planner") or {}), _composed(_without_planner(given))


def _without_planner(config: Mapping) -> dict:
    """A config mapping as executorch's ``LlmConfig`` may see it: no ``planner`` section."""
    return {k: v for k, v in config.items() if k != "planner"}


def _composed(*layers: Any) -> Any:
    """An ``LlmConfig``: its defaults, then each layer over them, as export_llm composes its config."""
    from omegaconf import OmegaConf

    from executorch.extension.llm.export.config.llm_config import LlmConfig

    return OmegaConf.to_object(OmegaConf.merge(OmegaConf.structured(LlmConfig), *layers))


# ---- the two entry points -------------------------------------------------------------------


def export_llm(config: Any, **planner_options: Any) -> Exported:
    """Runs executorch's export_llm pipeline on ``config`` with the planner (see the module doc).
    ``planner_options``: ``strategy``, ``buffer_strategies`` (a mapping), ``take_over_mutable_buffer``,
    ``cost`` (a mapping), ``compare_with_stock``, ``check_conversion``, ``verify_conversion`` and the
    chunking keys of ``PLANNER_KEYS``. Raises ``ExportLlmError`` on bad input, before anything is
    written."""
    section, llm_config = _llm_config(config)
    run = _Run(PlannerOptions.from_mapping({**section, **planner_options}))
    start = time.perf_counter()
    with _planned_partitioner(run):
        from executorch.examples.models.llama import export_llama_lib as lib

        lib.export_llama(llm_config)  # the wrapper checks the config first
    return _finish(run, time.perf_counter() - start)


def split_arguments(argv: Sequence[str]) -> Tuple[Optional[str], List[str], List[Tuple[str, str]]]:
    """``(--config FILE, export_llm's other arguments, planner.KEY=VALUE pairs)``."""
    config, rest, planner = None, [], []
    args = list(argv)
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--config":
            if i + 1 == len(args):
                raise ExportLlmError("--config needs a file")
            config, i = args[i + 1], i + 2
            continue
        if arg.startswith("--config="):
            config = arg.split("=", 1)[1]
        elif arg.startswith("planner."):
            key, eq, value = arg[len("planner.") :].partition("=")
            if not eq:
                raise ExportLlmError(f"{arg}: planner keys take planner.KEY=VALUE")
            planner.append((key, value))
        else:
            rest.append(arg)
        i += 1
    return config, rest, planner


def _parse_value(text: str) -> Any:
    """A command-line value as Hydra reads one: YAML scalars, lists and mappings."""
    import yaml

    try:
        return yaml.safe_load(text) if text.strip() else text
    except yaml.YAMLError:
        return text


def _planner_from_arguments(config_file: dict, pairs: List[Tuple[str, str]]) -> PlannerOptions:
    """The config file's planner section, then the command line's planner.KEY=VALUE in order."""
    planner = PlannerOptions.from_mapping(config_file.get("planner") or {})
    for key, value in pairs:
        planner.set(key, _parse_value(value))
    return planner


def _precheck(config_file: dict, rest: List[str], planner: PlannerOptions) -> None:
    """The config as export_llm will compose it (the file, then the overrides), checked before
    anything runs. Hydra syntax OmegaConf cannot read is left to the check inside the pipeline."""
    from omegaconf import OmegaConf

    try:
        dotlist = [a for a in rest if not a.startswith("-") and "=" in a]
        composed = _composed(_without_planner(config_file), OmegaConf.from_dotlist(dotlist))
    except Exception:  # export_llm itself will say what is wrong with it
        return
    _check_config(composed, planner)


def main(argv: Optional[Sequence[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in ("-h", "--help"):
        print(__doc__)
        print("planner.* keys:")
        for key, doc in PLANNER_KEYS.items():
            print(f"  planner.{key}: {doc}")
        return 0
    try:
        return _main(argv)
    except ExportLlmError as e:
        print(f"partition_planner.export_llm: {e}", file=sys.stderr)
        return 2


def _main(argv: List[str]) -> int:
    config_path, rest, pairs = split_arguments(argv)
    config_file = _load_yaml(config_path) if config_path else {}
    planner = _planner_from_arguments(config_file, pairs)
    _hook_module()
    _precheck(config_file, rest, planner)

    from executorch.extension.llm.export import export_llm as entry

    run = _Run(planner)
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="partition-planner-export-llm-") as scratch:
        forwarded = list(rest)
        if config_path:
            if "planner" in config_file:
                # executorch's LlmConfig has no planner section: it sees the file without it.
                import yaml

                filtered = os.path.join(scratch, os.path.basename(config_path))
                with open(filtered, "w") as f:
                    yaml.safe_dump(_without_planner(config_file), f)
                config_path = filtered
            forwarded = ["--config", config_path] + forwarded
        saved_argv = sys.argv
        sys.argv = [entry.__file__] + forwarded
        try:
            with _planned_partitioner(run):
                entry.main()
        except SystemExit as e:
            # Hydra prints a failed job's error and exits; a refusal of ours is said as ours.
            if isinstance(run.error, ExportLlmError):
                raise run.error from None
            if run.error is not None or e.code not in (0, None):
                return e.code if isinstance(e.code, int) else 1
        finally:
            sys.argv = saved_argv
    if run.error is not None:
        raise run.error
    print(_finish(run, time.perf_counter() - start).summary())
    return 0


# ---- after the pipeline ---------------------------------------------------------------------


def _finish(run: _Run, seconds: float) -> Exported:
    version = _executorch_version()
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


class _CallableModule(types.ModuleType):
    """``partition_planner.export_llm`` is both this module (``python -m``) and, called, the
    Python entry point ``export_llm(config, **planner_options)``."""

    def __call__(self, config: Any, **planner_options: Any) -> Exported:
        return export_llm(config, **planner_options)


sys.modules[__name__].__class__ = _CallableModule

if __name__ == "__main__":
    sys.exit(main())
