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

import os
import sys
import tempfile
import time
from collections.abc import Sequence
from typing import Any

from .config import check_config, composed, load_yaml, without_planner
from .hook import Run, hook_module, planned_partitioner
from .options import PLANNER_KEYS, ExportLlmError, PlannerOptions
from .results import finish

def split_arguments(argv: Sequence[str]) -> tuple[str | None, list[str], list[tuple[str, str]]]:
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


def planner_from_arguments(config_file: dict, pairs: list[tuple[str, str]]) -> PlannerOptions:
    """The config file's planner section, then the command line's planner.KEY=VALUE in order."""
    planner = PlannerOptions.from_mapping(config_file.get("planner") or {})
    for key, value in pairs:
        planner.set(key, _parse_value(value))
    return planner


def _precheck(config_file: dict, rest: list[str], planner: PlannerOptions) -> None:
    """The config as export_llm will compose it (the file, then the overrides), checked before
    anything runs. Hydra syntax OmegaConf cannot read is left to the check inside the pipeline."""
    from omegaconf import OmegaConf

    try:
        dotlist = [a for a in rest if not a.startswith("-") and "=" in a]
        config = composed(without_planner(config_file), OmegaConf.from_dotlist(dotlist))
    except Exception:  # export_llm itself will say what is wrong with it
        return
    check_config(config, planner)


def main(argv: Sequence[str] | None = None) -> int:
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


def _main(argv: list[str]) -> int:
    config_path, rest, pairs = split_arguments(argv)
    config_file = load_yaml(config_path) if config_path else {}
    planner = planner_from_arguments(config_file, pairs)
    hook_module()
    _precheck(config_file, rest, planner)

    from executorch.extension.llm.export import export_llm as entry

    run = Run(planner)
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="partition-planner-export-llm-") as scratch:
        forwarded = list(rest)
        if config_path:
            if "planner" in config_file:
                # executorch's LlmConfig has no planner section: it sees the file without it.
                import yaml

                filtered = os.path.join(scratch, os.path.basename(config_path))
                with open(filtered, "w") as f:
                    yaml.safe_dump(without_planner(config_file), f)
                config_path = filtered
            forwarded = ["--config", config_path] + forwarded
        saved_argv = sys.argv
        sys.argv = [entry.__file__] + forwarded
        try:
            with planned_partitioner(run):
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
    print(finish(run, time.perf_counter() - start).summary())
    return 0
