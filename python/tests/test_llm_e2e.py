"""Real LLM architectures (Qwen3.5, LFM2.5, Llama 3.2: real layer counts and types, widths shrunk,
random weights) through real executorch and coremltools."""

from __future__ import annotations

import pytest
from conftest import ET_MINOR, specs
from test_seed_e2e import SPEC_ERROR, assert_planned_outcome

from executorch.backends.apple.coreml.partition import CoreMLPartitioner
from partition_planner import PlannedCoreMLPartitioner
from partition_planner.testing import LLMS, llm, llm_steps


# Take-over on only means something at iOS18 (below it states are impossible and it plans as off).
CONFIGS = [(True, "iOS18"), (False, "iOS18"), (False, "iOS17")]


@pytest.mark.parametrize("name", sorted(LLMS))
@pytest.mark.parametrize("take_over,target", CONFIGS, ids=["takeover_on-iOS18", "takeover_off-iOS18", "takeover_off-iOS17"])
def test_planned_llm_lowers_with_the_promised_states_and_matches_eager(name, take_over, target, lowered):
    model, example = llm(name)
    part = PlannedCoreMLPartitioner(compile_specs=specs(target), take_over_mutable_buffer=take_over, log_explanations=False)
    result = lowered(model, part, example)
    plan = part.last_plan
    # The drop-in runs no stock pass: its plan is compared with the stock proposal reproduced in Rust.
    assert plan["stats"]["stock_proposal"] == "reproduced"
    if take_over:
        # Every KV cache and conv state is kept; what cannot be whole says why.
        refused = [b for b in plan["buffers"] if b["strategy"] != "state"]
        assert all(b["rule"] == "SUPPORTED" and "llama.gated_delta_rule" in b["reason"] for b in refused), refused
    else:
        # What export_llm runs: no state, and never more delegate calls than the (reproduced) stock
        # proposal.
        assert plan["stats"]["states"] == 0
        assert plan["stats"]["partitions"] <= plan["stats"]["stock_partitions"], plan["stats"]
        assert all(len(b["alternatives"]) == 2 for b in plan["buffers"])
    assert_planned_outcome(model, llm_steps(), plan, result, tolerance=1e-3)


def test_stock_qwen3_5_fails_as_reported(lowered):
    """executorch 1.4 (gated delta rule decomposed): take-over off still creates 36 states.
    executorch 1.5 (llama.gated_delta_rule, CPU only): take-over on fails with SpecViolationError."""
    model, example = llm("qwen3_5_0_8b")
    if ET_MINOR < (1, 5):
        stock = CoreMLPartitioner(compile_specs=specs("iOS18"), take_over_mutable_buffer=False)
        assert len(lowered(model, stock, example).all_states()) == 36
    else:
        stock = CoreMLPartitioner(compile_specs=specs("iOS18"), take_over_mutable_buffer=True)
        with pytest.raises(Exception, match=SPEC_ERROR):
            lowered(model, stock, example)
