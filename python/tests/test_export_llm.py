"""``python -m partition_planner.export_llm``: executorch's own export_llm pipeline with the planner in
place of the stock Core ML partitioner, on the LLM topologies of ``partition_planner/params`` (random
weights, ``base.model_class=llama3``, no hub), as a user runs it: take-over off, iOS18.

The .pte is parsed with executorch's program loader (Core ML delegates cannot execute on Linux) and
its Core ML delegate calls counted; the plan beside it must say as many partitions, no state, and
no more partitions than the stock proposal. Each topology is also exported with ``cpu`` for every
buffer, and Llama 3.2 through the Python entry point with take-over on. Bad input is refused before
anything is built."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from importlib import resources

import pytest
import yaml

import partition_planner
from partition_planner import export_llm as entry
from partition_planner.export_llm import ExportLlmError
from partition_planner.export_llm.cli import planner_from_arguments
from partition_planner.export_llm.hook import executorch_version
from partition_planner.testing import EXPORT_LLM_ARGUMENTS, LLMS, coreml_delegate_calls

PARAMS = resources.files("partition_planner") / "params"
# The command for a 16-layer topology with shrunk widths, as a user runs it.
COMMON = EXPORT_LLM_ARGUMENTS


def run_command(tmp_path, name, *extra):
    out = tmp_path / "out"
    args = [*COMMON, f"base.params={PARAMS / LLMS[name]}", f"export.output_dir={out}", *extra]
    # cwd: Hydra writes its outputs/ directory there, as export_llm does.
    done = subprocess.run(
        [sys.executable, "-m", "partition_planner.export_llm", *args],
        cwd=tmp_path, capture_output=True, text=True, timeout=1200,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    return out, done.stdout


def written(out):
    """The .pte, its plan@1 and its text report."""
    (pte,) = out.glob("*.pte")
    stem = pte.name[: -len(".pte")]
    plan = json.loads((out / f"{stem}.plan.json").read_text())
    report = (out / f"{stem}.plan.txt").read_text()
    return pte, plan, report


@pytest.mark.parametrize("name", list(LLMS))
def test_the_command_writes_the_planned_program(tmp_path, name):
    out, stdout = run_command(tmp_path, name)
    pte, plan, report = written(out)
    stats = plan["stats"]
    assert plan["schema"] == partition_planner.PLAN_SCHEMA
    assert plan["options"]["take_over_mutable_buffer"] is False
    assert stats["states"] == 0
    assert stats["partitions"] <= stats["stock_partitions"]
    assert coreml_delegate_calls(pte) == stats["partitions"]
    assert "partition" in report
    assert f"plan: {stats['partitions']} Core ML partition(s), 0 state(s)" in stdout
    assert "planning:" in stdout and "stock proposal" in stdout


@pytest.mark.parametrize("name", list(LLMS))
def test_strategy_cpu_shows_in_the_plan(tmp_path, name):
    out, _ = run_command(tmp_path, name, "planner.strategy=cpu")
    pte, plan, _ = written(out)
    assert plan["buffers"] and {b["strategy"] for b in plan["buffers"]} == {"cpu"}
    assert {b["requested"] for b in plan["buffers"]} == {"cpu"}
    assert coreml_delegate_calls(pte) == plan["stats"]["partitions"]


def test_the_python_entry_point_with_take_over_on(tmp_path):
    """``partition_planner.export_llm(config, ...)`` (the module is callable): take-over on at
    iOS18, so the Llama KV caches become Core ML states, in as many delegates as the plan says."""
    out = tmp_path / "out"
    config = {
        "base": {"model_class": "llama3", "params": str(PARAMS / LLMS["llama3_2_1b"])},
        "model": {"use_kv_cache": True, "enable_dynamic_shape": False},
        "backend": {"coreml": {"enabled": True, "ios": 18}},
        "export": {"max_seq_length": 16, "max_context_length": 16, "output_dir": str(out)},
    }
    exported = partition_planner.export_llm(config, take_over_mutable_buffer=True)
    pte, plan, _ = written(out)
    assert exported.pte == str(pte) and exported.plans == [plan] and "planning:" in exported.summary()
    assert plan["options"]["take_over_mutable_buffer"] is True
    assert plan["stats"]["states"] == len(plan["buffers"]) > 0
    assert coreml_delegate_calls(pte) == plan["stats"]["partitions"]


# ---- refusals: in process, before anything is exported ------------------------------------


def refused(capsys, tmp_path, *args):
    """Refused before executorch's pipeline starts: nothing in the output directory, and no Hydra
    ``outputs/`` in the working directory."""
    out, cwd = tmp_path / "out", tmp_path / "cwd"
    cwd.mkdir(exist_ok=True)
    before = os.getcwd()
    os.chdir(cwd)
    try:
        code = entry.main([*args, f"export.output_dir={out}"])
    finally:
        os.chdir(before)
    assert code == 2
    assert not out.exists() or not any(out.iterdir())
    assert not any(cwd.iterdir()), "executorch's pipeline ran before the refusal"
    return capsys.readouterr().err


def test_a_config_without_core_ml_is_refused(capsys, tmp_path):
    args = [a for a in COMMON if not a.startswith("backend.coreml.enabled")]
    err = refused(capsys, tmp_path, *args, f"base.params={PARAMS / LLMS['llama3_2_1b']}")
    assert "backend.coreml.enabled=true" in err
    with pytest.raises(ExportLlmError, match="backend.coreml.enabled=true"):
        partition_planner.export_llm({"base": {"model_class": "llama3"}})


def test_an_unknown_planner_key_is_refused_listing_the_known_ones(capsys, tmp_path):
    err = refused(capsys, tmp_path, *COMMON, "planner.stratgy=cpu")
    assert "unknown key planner.stratgy" in err
    for key in entry.PLANNER_KEYS:
        assert f"planner.{key}" in err
    # The same in a config file's planner section.
    config = tmp_path / "llm.yaml"
    config.write_text(yaml.safe_dump({"backend": {"coreml": {"enabled": True, "ios": 18}}, "planner": {"take_over": True}}))
    err = refused(capsys, tmp_path, "--config", str(config))
    assert "unknown key planner.take_over" in err


def test_a_strategy_the_options_forbid_is_refused(capsys, tmp_path):
    err = refused(capsys, tmp_path, *COMMON, "planner.strategy=state")
    assert "take_over_mutable_buffer is off" in err and "NO_HIDDEN_STATE" in err
    ios17 = [a if a != "backend.coreml.ios=18" else "backend.coreml.ios=17" for a in COMMON]
    err = refused(
        capsys, tmp_path, *ios17, "planner.take_over_mutable_buffer=true",
        "planner.buffer_strategies=layers.0.attention.kv_cache.k_cache=state",
    )
    assert "iOS18 or later" in err and "iOS17" in err
    err = refused(capsys, tmp_path, *COMMON, "planner.strategy=stat")
    assert 'unknown strategy "stat"' in err
    err = refused(capsys, tmp_path, *COMMON, "planner.take_over_mutable_buffer=maybe")
    assert "true or false" in err


def test_a_missing_hook_is_refused_naming_the_version(capsys, tmp_path, monkeypatch):
    from executorch.examples.models.llama import export_llama_lib

    monkeypatch.delattr(export_llama_lib, "get_coreml_partitioner")
    err = refused(capsys, tmp_path, *COMMON)
    assert f"executorch {executorch_version()}" in err and "never falls back" in err


def test_planner_keys_from_the_command_line_and_a_config_file(tmp_path):
    config = {"planner": {"strategy": "io", "buffer_strategies": {"a": "cpu"}, "cost": {"cpu_op_us": 2}}}
    options = planner_from_arguments(
        config,
        [("buffer_strategies", "b=state"), ("cost.bytes_per_us", "100"), ("take_over_mutable_buffer", "true"), ("strategy", "auto")],
    )
    assert options.strategy == "auto"
    assert options.buffer_strategies == {"a": "cpu", "b": "state"}
    assert options.cost == {"cpu_op_us": 2.0, "bytes_per_us": 100.0}
    assert options.take_over_mutable_buffer is True
    options.validate("iOS18")
    assert entry.split_arguments(["--config", "c.yaml", "a=1", "planner.strategy=cpu", "--config=d.yaml"]) == (
        "d.yaml", ["a=1"], [("strategy", "cpu")],
    )


def test_budget_and_cut_keys_reach_the_planner(tmp_path):
    config = {"planner": {"max_weight_bytes": "2GiB", "cut_after": ["layers.*"]}}
    options = planner_from_arguments(config, [("max_ops", "500"), ("cut_before", "layers.0")])
    assert (options.max_weight_bytes, options.max_ops) == ("2GiB", 500)
    assert (options.cut_after, options.cut_before) == (["layers.*"], ["layers.0"])
    assert options.overrides("iOS18")["options"] == {
        "take_over_mutable_buffer": False,
        "max_weight_bytes": "2GiB",
        "max_ops": 500,
        "cut_after": ["layers.*"],
        "cut_before": ["layers.0"],
        "minimum_deployment_target": "iOS18",
    }
    options.validate("iOS18")
    assert entry.PlannerOptions.from_mapping({"max_weight_bytes": "lots"}).max_weight_bytes == "lots"
    with pytest.raises(ExportLlmError, match="not a byte size"):
        entry.PlannerOptions.from_mapping({"max_weight_bytes": "lots"}).validate("iOS18")
    with pytest.raises(ExportLlmError, match="whole number of ops"):
        entry.PlannerOptions.from_mapping({"max_ops": -1})


def test_conversion_keys_reach_the_partitioner(tmp_path):
    """planner.check_conversion and planner.verify_conversion (issue #30): probes on and
    verification off unless asked, booleans only, and handed to the drop-in as they are."""
    default = planner_from_arguments({}, [])
    assert (default.check_conversion, default.verify_conversion) == (True, False)
    options = planner_from_arguments(
        {"planner": {"verify_conversion": True}}, [("check_conversion", "false")]
    )
    assert (options.check_conversion, options.verify_conversion) == (False, True)
    kwargs = options.partitioner_kwargs()
    assert (kwargs["check_conversion"], kwargs["verify_conversion"]) == (False, True)
    with pytest.raises(ExportLlmError, match="planner.verify_conversion must be true or false"):
        entry.PlannerOptions.from_mapping({"verify_conversion": "sometimes"})
