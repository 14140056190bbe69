"""The seed report's models through real executorch and coremltools: the stock outcome as it is
today (so a change upstream is noticed) and the planned outcome (lowers, the states the plan
promises, no buffer in two delegates, eager numerics for three decode steps on device semantics)."""

from __future__ import annotations

import copy

import pytest
import torch
from conftest import ET_MINOR, specs

from executorch.backends.apple.coreml.partition import CoreMLPartitioner
from executorch.exir import to_edge
from partition_planner import PlannedCoreMLPartitioner, export_graph, plan
from partition_planner.testing import SliceCache, WholeCache, seed_steps

STATE_ERROR = "State model is supported only >= iOS18"
CYCLE_ERROR = "Invalid partition, found dependency cycles"
SPEC_ERROR = "does not point to a buffer that exists"

MODELS = {"slice": SliceCache, "whole": WholeCache}
CASES = [(take_over, target) for take_over in (True, False) for target in ("iOS17", "iOS18")]


def planned_case(model_name, take_over, target, lowered, **extra):
    model = MODELS[model_name]()
    steps = seed_steps()
    part = PlannedCoreMLPartitioner(compile_specs=specs(target), take_over_mutable_buffer=take_over, **extra)
    result = lowered(model, part, steps[0])
    plan = part.last_plan
    return model, steps, part, plan, result


def assert_planned_outcome(model, steps, plan, result, tolerance=1e-4):
    promised = {b["buffer"] for b in plan["buffers"] if b["strategy"] == "state"}
    assert result.all_states() == promised
    # One lowered delegate per planned partition: the device makes the calls the plan counts.
    assert len(result.states) == plan["stats"]["partitions"]
    assert plan["stats"]["states"] == len(promised)
    for name in {n for held in result.held for n in held}:
        assert sum(name in held for held in result.held) == 1, f"{name} is held by two delegates: {result.held}"
    step_errors, buffer_errors = result.max_errors(model, steps)
    assert max(step_errors) < tolerance, step_errors
    assert max(buffer_errors.values()) < tolerance, buffer_errors
    result.manager.to_executorch()


@pytest.mark.parametrize("model_name", sorted(MODELS))
@pytest.mark.parametrize("take_over,target", CASES)
def test_planned_lowering_runs_and_matches_eager(model_name, take_over, target, lowered):
    model, steps, part, plan, result = planned_case(model_name, take_over, target, lowered)
    states = plan["stats"]["states"]
    assert states == (1 if take_over and target == "iOS18" else 0)
    assert_planned_outcome(model, steps, plan, result)
    assert part.report().startswith("plan for")


@pytest.mark.parametrize("strategy", ["cpu", "io"])
def test_requested_strategies_lower_and_match(strategy, lowered):
    model, steps, _, plan, result = planned_case("slice", True, "iOS18", lowered, strategy=strategy)
    assert plan["buffers"][0]["strategy"] == strategy
    assert_planned_outcome(model, steps, plan, result)


def test_stock_slice_with_take_over_off(lowered):
    """executorch 1.4 makes a hidden state of the buffer although take-over is off; 1.5 does not."""
    model, steps = SliceCache(), seed_steps()
    stock = lambda target: CoreMLPartitioner(compile_specs=specs(target), take_over_mutable_buffer=False)  # noqa: E731
    if ET_MINOR < (1, 5):
        with pytest.raises(Exception, match=STATE_ERROR):
            lowered(model, stock("iOS17"), steps[0])
        assert lowered(model, stock("iOS18"), steps[0]).all_states() == {"cache"}
    else:
        assert lowered(model, stock("iOS17"), steps[0]).all_states() == set()
        assert lowered(model, stock("iOS18"), steps[0]).all_states() == set()


def test_stock_slice_with_take_over_on(lowered):
    model, steps = SliceCache(), seed_steps()
    with pytest.raises(Exception, match=STATE_ERROR):
        lowered(model, CoreMLPartitioner(compile_specs=specs("iOS17"), take_over_mutable_buffer=True), steps[0])
    assert lowered(model, CoreMLPartitioner(compile_specs=specs("iOS18"), take_over_mutable_buffer=True), steps[0]).all_states() == {"cache"}


class WritersUntagged(CoreMLPartitioner):
    """The fix the seed report tried and would not send: drop the tags of the buffer writers."""

    def partition(self, exported_program):
        result = super().partition(exported_program)
        writers = set(result.tagged_exported_program.graph_signature.buffers_to_mutate)
        for node in result.tagged_exported_program.graph.nodes:
            if node.name in writers:
                node.meta.pop("delegation_tag", None)
        return result


def test_untagging_the_writer_is_a_cycle_and_the_planner_fixes_it(lowered):
    model, steps = SliceCache(), seed_steps()
    with pytest.raises(Exception, match=CYCLE_ERROR):
        lowered(model, WritersUntagged(compile_specs=specs("iOS18"), take_over_mutable_buffer=False), steps[0])
    # That tagging as a bridge document: planning it names what it breaks.
    broken = WritersUntagged(compile_specs=specs("iOS18"), take_over_mutable_buffer=False)
    program = to_edge(torch.export.export(copy.deepcopy(model).eval(), steps[0])).exported_program()
    found = plan(export_graph(broken.partition(program).tagged_exported_program, broken))
    assert found["stats"]["stock_proposal"] == "document"
    stock_rules = {e["rule"] for e in found["explanations"] if e["scope"] == "stock"}
    assert "ACYCLIC" in stock_rules
    # executorch 1.4 also tags the buffer's placeholder with take-over off: a stale copy besides.
    assert ("NO_STALE_COPY" in stock_rules) == (ET_MINOR < (1, 5))
    cycle = next(e for e in found["explanations"] if e["rule"] == "ACYCLIC")
    assert any(step["tag"] is None for step in cycle["path"])
    # The drop-in handed that tagged program clears the tags: its plan is compared with the stock
    # proposal reproduced for the untagged program, which has no cycle.
    part = PlannedCoreMLPartitioner(compile_specs=specs("iOS18"), take_over_mutable_buffer=False)
    part.partition(program)
    assert part.last_plan["stats"]["stock_proposal"] == "reproduced"
    assert "ACYCLIC" not in {e["rule"] for e in part.explanations() if e["scope"] == "stock"}
    result = lowered(model, part, steps[0])
    assert_planned_outcome(model, steps, part.last_plan, result)


@pytest.mark.parametrize("skipped", ["aten.mul.tensor", "aten.add.tensor", "aten.copy.default", "aten.slice_scatter.default"])
def test_a_cpu_only_op_inside_the_chain(skipped, lowered):
    """Stock executorch with take-over on either refuses the program (SpecViolationError, as on
    Qwen3.5's gated delta-net) or lowers it and reads a stale copy from the second step on; the
    plan gives up the state, naming the op, keeps the chain on CPU or passes the buffer through the
    delegates (whichever the cost model estimates cheaper), and matches eager."""
    model, steps = SliceCache(), seed_steps()
    stock = CoreMLPartitioner(compile_specs=specs("iOS18"), take_over_mutable_buffer=True, skip_ops_for_coreml_delegation=[skipped])
    try:
        result = lowered(model, stock, steps[0])
    except Exception as e:  # noqa: BLE001 - the stock failure is the point
        assert SPEC_ERROR in str(e), e
    else:
        step_errors, _ = result.max_errors(model, steps)
        assert step_errors[0] < 1e-4 and step_errors[1] > 1.0, f"expected a stale read from step 2: {step_errors}"
    model, steps, part, plan, result = planned_case("slice", True, "iOS18", lowered, skip_ops_for_coreml_delegation=[skipped])
    assert plan["buffers"][0]["strategy"] in ("cpu", "io")
    assert plan["buffers"][0]["rule"] == "SUPPORTED"
    assert "state: impossible" in plan["buffers"][0]["reason"]
    assert_planned_outcome(model, steps, plan, result)


def test_auto_takes_the_cost_constants_and_chooses_cpu_when_bytes_are_costly(lowered):
    """Take-over off: with the default constants the buffer passes through the one delegate; with
    bytes made costly and calls free, its chain runs on CPU instead. Both lower and match eager."""
    model, steps, part, plan, result = planned_case("slice", False, "iOS18", lowered)
    assert (plan["buffers"][0]["strategy"], plan["stats"]["partitions"]) == ("io", 1)
    assert part.cost_model == {"call_overhead_us": 200.0, "bytes_per_us": 10000.0, "cpu_op_us": 5.0}
    costly = {"call_overhead_us": 0, "bytes_per_us": 0.01}
    model, steps, part, plan, result = planned_case("slice", False, "iOS18", lowered, cost=costly)
    buffer = plan["buffers"][0]
    assert buffer["strategy"] == "cpu", buffer["reason"]
    assert buffer["reason"].endswith("chose cpu")
    assert [a["strategy"] for a in buffer["alternatives"]] == ["io", "cpu"]
    assert plan["cost"]["model"]["bytes_per_us"] == 0.01
    assert_planned_outcome(model, steps, plan, result)


@pytest.mark.parametrize("cost", [{"speed": 1}, {"bytes_per_us": 0}, {"cpu_op_us": -1}])
def test_unusable_cost_constants_are_refused_when_the_partitioner_is_built(cost):
    with pytest.raises(ValueError):
        PlannedCoreMLPartitioner(compile_specs=specs("iOS18"), cost=cost)
