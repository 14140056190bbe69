"""Plans the converter accepts (issue #30), through real executorch and coremltools: every class of
op the Core ML support check accepts and coremltools 9.0 refuses, found in executorch's backend
operator suite, makes stock lowering abort inside coremltools; the drop-in lowers each, the op on
CPU (or decomposed first) and explained, with eager's values. A buffer whose writer is refused
takes its chain with it; verification finds a refused op by bisection; verdicts outlive the
process that found them."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
import textwrap
import traceback

import coremltools as ct
import pytest
import torch
from conftest import specs

from executorch.backends.apple.coreml.compiler import CoreMLBackend
from executorch.backends.apple.coreml.partition import CoreMLPartitioner
from executorch.exir import EdgeCompileConfig, to_edge_transform_and_lower
from partition_planner import PlannedCoreMLPartitioner
from partition_planner.conversion import VerdictCache, cache_root
from partition_planner.conversion.program import subprogram
from partition_planner.device import lowered_modules, run_steps
from partition_planner.testing import RefusedWriter, conversion_failures, refused_writer_steps

FAILURES = conversion_failures()
# What coremltools 9.0 says of each class, as stock lowering reports it.
STOCK_ERRORS = {
    "max_pool_dilation": "@max_pool does not support dilation > 1",
    "conv_transpose_output_padding": "'NoneType' object is not iterable",
    "conv_circular_padding": "Pad mode should be one of",
    "avg_pool3d_ceil_mode_with_padding": "pool3D with ceil mode=True and include_pad=True not supported",
    "index_put_two_indices": "others have (1,)",
    "adaptive_max_pool_indices": "Item selection is supported only on python list/tuple objects",
}


def suite_specs():
    """The compile specs of the operator suite's Core ML flow: iOS15, everything else default."""
    return CoreMLBackend.generate_compile_specs(minimum_deployment_target=ct.target.iOS15)


def _lower(model, partitioner, inputs):
    """As executorch's operator suite lowers: strict export, its edge config, iOS15 by default."""
    exported = torch.export.export(copy.deepcopy(model).eval().requires_grad_(False), inputs, strict=True)
    return to_edge_transform_and_lower(
        exported, partitioner=[partitioner], compile_config=EdgeCompileConfig(_check_ir_validity=False)
    )


def _flat(value):
    return list(value) if isinstance(value, (tuple, list)) else [value]


def _max_error(program, model, inputs) -> float:
    outputs, _ = run_steps(program, [inputs])
    expected = copy.deepcopy(model).eval()(*inputs)
    return max(
        float((got.double() - want.double()).abs().max()) for got, want in zip(_flat(outputs[0]), _flat(expected))
    )


def test_every_failure_class_is_covered():
    assert sorted(FAILURES) == sorted(STOCK_ERRORS)


@pytest.mark.parametrize("name", sorted(FAILURES))
def test_stock_aborts_inside_coremltools_and_the_drop_in_lowers_explained_with_eager_values(name):
    model, inputs = FAILURES[name]
    with pytest.raises(Exception) as stock:
        _lower(model, CoreMLPartitioner(compile_specs=suite_specs()), inputs).to_executorch()
    assert STOCK_ERRORS[name] in str(stock.value)
    assert any("coremltools" in f.filename for f in traceback.extract_tb(stock.tb))

    part = PlannedCoreMLPartitioner(compile_specs=suite_specs())
    manager = _lower(model, part, inputs)
    program = manager.exported_program()
    assert _max_error(program, model, inputs) < 1e-4
    manager.to_executorch()

    # The refused op is on CPU, or was decomposed rather than kept whole; either way a CONVERTIBLE
    # explanation quotes the converter.
    explained = [e for e in part.explanations() if e["rule"] == "CONVERTIBLE" and e["scope"] == "plan"]
    assert explained, part.report()
    assert any(STOCK_ERRORS[name] in e["message"] for e in explained), explained
    assert "[CONVERTIBLE]" in part.report()
    delegated = {
        n.name for m in lowered_modules(program) for n in m.original_module.graph.nodes if n.op == "call_function"
    }
    for e in explained:
        assert not set(e["nodes"]) & delegated, (e, delegated)
    assert part.conversion[-1]["checked"]


@pytest.mark.parametrize("take_over", [True, False])
def test_a_chain_whose_writer_the_converter_refuses_goes_with_it(take_over, lowered):
    model, steps = RefusedWriter(), refused_writer_steps()
    target = "iOS18"
    with pytest.raises(Exception, match=r"others have \(1,\)"):
        lowered(model, CoreMLPartitioner(compile_specs=specs(target), take_over_mutable_buffer=take_over), steps[0])
    part = PlannedCoreMLPartitioner(compile_specs=specs(target), take_over_mutable_buffer=take_over)
    result = lowered(model, part, steps[0])
    plan = part.last_plan
    (cache,) = plan["buffers"]
    assert cache["strategy"] in ("cpu", "io")
    assert plan["node_tags"][cache["writer"]] is None
    if take_over:
        # The state is refused because of the writer, and the reason says so.
        assert cache["rule"] == "CONVERTIBLE"
        assert "cannot be delegated: coremltools" in cache["reason"] and "others have (1,)" in cache["reason"]
    assert result.all_states() == set()
    step_errors, buffer_errors = result.max_errors(model, steps)
    assert max(step_errors) < 1e-4 and max(buffer_errors.values()) < 1e-4
    result.manager.to_executorch()


def test_verification_finds_a_refused_op_by_bisection():
    """Probes off: the partition holding index_put fails to convert; bisection over its ops blames
    index_put, which is kept on CPU, and the program is planned again and lowers."""
    model, inputs = FAILURES["index_put_two_indices"]
    part = PlannedCoreMLPartitioner(compile_specs=suite_specs(), check_conversion=False, verify_conversion=True)
    manager = _lower(model, part, inputs)
    conversion = part.conversion[-1]
    assert conversion["found_by_verification"] == ["aten_index_put_default"]
    assert conversion["verified_partitions"] >= 2
    (found,) = [e for e in part.explanations() if e["rule"] == "CONVERTIBLE" and e["scope"] == "plan"]
    assert found["nodes"] == ["aten_index_put_default"]
    assert "found by converting its planned partition" in found["message"]
    assert _max_error(manager.exported_program(), model, inputs) < 1e-4
    manager.to_executorch()


def test_verification_without_probes_names_an_op_kept_whole_that_cannot_run_on_cpu():
    from partition_planner.partitioner import ConversionVerificationError

    model, inputs = FAILURES["max_pool_dilation"]
    part = PlannedCoreMLPartitioner(compile_specs=suite_specs(), check_conversion=False, verify_conversion=True)
    with pytest.raises(ConversionVerificationError, match="aten.max_pool2d.default.*kept whole"):
        _lower(model, part, inputs)


_SECOND_PROCESS = textwrap.dedent(
    """
    import copy, json, torch
    from executorch.backends.apple.coreml.compiler import CoreMLBackend
    from executorch.exir import EdgeCompileConfig, to_edge_transform_and_lower
    import coremltools as ct
    from partition_planner import PlannedCoreMLPartitioner
    from partition_planner.testing import conversion_failures

    model, inputs = conversion_failures()["max_pool_dilation"]
    part = PlannedCoreMLPartitioner(compile_specs=CoreMLBackend.generate_compile_specs(
        minimum_deployment_target=ct.target.iOS15))
    ep = torch.export.export(model.eval(), inputs, strict=True)
    to_edge_transform_and_lower(ep, partitioner=[part], compile_config=EdgeCompileConfig(_check_ir_validity=False))
    print(json.dumps({"probed": part._conversion_probes().probed,
                      "signatures": len(part._conversion_probes().asked),
                      "refused": [e["nodes"] for e in part.explanations() if e["rule"] == "CONVERTIBLE"]}))
    """
)


def test_verdicts_survive_into_a_second_process_and_the_cache_can_be_cleared(tmp_path):
    env = {**os.environ, "PARTITION_PLANNER_CACHE_DIR": str(tmp_path)}

    def export_once() -> dict:
        done = subprocess.run(
            [sys.executable, "-c", _SECOND_PROCESS], env=env, capture_output=True, text=True, check=True
        )
        return json.loads(done.stdout.strip().splitlines()[-1])

    first = export_once()
    assert first["probed"] > 0
    second = export_once()
    assert second["probed"] == 0 and second["signatures"] == first["signatures"]
    assert second["refused"] == first["refused"]
    (kept,) = (tmp_path / "conversion").glob("*.jsonl")
    assert "torch-" in kept.name and "executorch-" in kept.name and "coremltools-" in kept.name
    lines = [json.loads(line) for line in kept.read_text().splitlines()]
    assert len(lines) == first["probed"]
    assert any(not entry["converts"] and "dilation > 1" in entry["error"] for entry in lines)

    tool = [sys.executable, "-m", "partition_planner.conversion"]
    info = subprocess.run(tool + ["info"], env=env, capture_output=True, text=True, check=True).stdout
    assert f"{kept.name}: {len(lines)} verdict(s)" in info
    cleared = subprocess.run(tool + ["clear"], env=env, capture_output=True, text=True, check=True).stdout
    assert "removed 1 verdict file(s)" in cleared
    assert not (tmp_path / "conversion").exists()
    assert export_once()["probed"] == first["probed"]


def test_the_cache_lives_under_the_users_cache_directory(monkeypatch, tmp_path):
    monkeypatch.delenv("PARTITION_PLANNER_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    if sys.platform != "darwin":
        assert cache_root() == tmp_path / "partition-planner"
    assert VerdictCache.for_installed().path.parent == cache_root() / "conversion"


def test_a_cut_short_line_is_skipped_when_verdicts_are_read(tmp_path):
    path = tmp_path / "verdicts.jsonl"
    good = {"signature": "s", "converts": False, "found_by": "probe", "converter": "c", "call": "op()", "error": "E"}
    path.write_text(json.dumps(good) + "\n" + json.dumps(good)[:20])
    cache = VerdictCache(path)
    assert len(cache) == 1 and cache.get("s").error == "E"


@pytest.mark.parametrize("take_over", [True, False])
def test_the_program_a_probe_or_verification_converts_is_the_one_executorch_lowers(take_over):
    """``subprogram`` of each planned partition against executorch's own lowering of it: the same
    parameters, buffers, constants and buffer mutations, and as many user inputs and outputs."""
    from partition_planner.testing import SliceCache, seed_steps

    class Linear(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.cache = SliceCache()
            self.proj = torch.nn.Linear(8, 8)

        def forward(self, x, pos):
            return self.proj(self.cache(x, pos)).relu()

    captured = {}

    class Capture(PlannedCoreMLPartitioner):
        def partition(self, exported_program):
            result = super().partition(exported_program)
            tags = self.last_plan["node_tags"]
            captured["programs"] = {
                tag: subprogram(exported_program, [n for n in exported_program.graph.nodes if tags[n.name] == tag])
                for tag in {t for t in tags.values() if t is not None}
            }
            return result

    part = Capture(compile_specs=specs("iOS18"), take_over_mutable_buffer=take_over)
    model = Linear().eval().requires_grad_(False)
    exported = torch.export.export(model, seed_steps(1)[0], strict=False)
    program = to_edge_transform_and_lower(exported, partitioner=[part]).exported_program()

    def described(signature):
        inputs = sorted((s.kind.name, s.target) for s in signature.input_specs if s.kind.name != "USER_INPUT")
        outputs = sorted((s.kind.name, s.target) for s in signature.output_specs if s.kind.name != "USER_OUTPUT")
        return inputs, outputs, len(signature.user_inputs), len(signature.user_outputs)

    lowered = sorted(described(m.original_module.graph_signature) for m in lowered_modules(program))
    ours = sorted(described(p.graph_signature) for p in captured["programs"].values())
    assert lowered == ours
    if take_over:
        assert any(("BUFFER_MUTATION", "cache.cache") in outputs for _, outputs, _, _ in ours)
