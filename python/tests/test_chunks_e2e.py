"""Chunked delegates (issue #17) through real executorch and coremltools: a Llama topology planned
under a weight budget lowers into that many Core ML delegates, each within budget as the lowered
program holds it, and runs as eager does; cuts asked by module path split the delegates where
executorch's static Llama export splits them with its graph_break op."""

from __future__ import annotations

import copy

import pytest
import torch
from conftest import specs
from test_seed_e2e import assert_planned_outcome
from torch.export.graph_signature import InputKind
from torch.library import Library, impl

from partition_planner import PlannedCoreMLPartitioner
from partition_planner.device import lowered_modules
from partition_planner.testing import llm, llm_steps

# The op executorch's examples/apple/coreml/llama/export_static_llm_coreml.py inserts so that the
# Core ML partitioner cuts its delegates there (Core ML does not support it).
_lib = Library("pp_chunks_test", "DEF")
_lib.define("graph_break.Tensor(Tensor x) -> Tensor")


@impl(_lib, "graph_break.Tensor", "CompositeExplicitAutograd")
def _graph_break(x):
    return x.clone()


class _GraphBreak(torch.nn.Module):
    """As export_static_llm_coreml.py's BlockWithGraphBreak: the op on every tensor argument of
    the block (before) or every tensor it returns (after)."""

    def __init__(self, block: torch.nn.Module, before: bool):
        super().__init__()
        self.block = block
        self.before = before

    @staticmethod
    def _broken(values):
        return tuple(torch.ops.pp_chunks_test.graph_break.Tensor(v) if isinstance(v, torch.Tensor) else v for v in values)

    def forward(self, *args, **kwargs):
        if self.before:
            return self.block(*self._broken(args), **kwargs)
        return self._broken(self.block(*args, **kwargs))


def constant_bytes(program) -> int:
    """Bytes of the parameters, lifted constants and unmutated buffers a program holds."""
    sig = program.graph_signature
    mutated = set(sig.buffers_to_mutate.values())
    total = 0
    for spec in sig.input_specs:
        constant = spec.kind in (InputKind.PARAMETER, InputKind.CONSTANT_TENSOR)
        if constant or (spec.kind == InputKind.BUFFER and spec.target not in mutated):
            tensor = program.state_dict[spec.target] if spec.target in program.state_dict else program.constants[spec.target]
            total += tensor.numel() * tensor.element_size()
    return total


def _exported_constant_bytes(model, example) -> int:
    model = copy.deepcopy(model).eval().requires_grad_(False)
    return constant_bytes(torch.export.export(model, example, strict=False))


@pytest.mark.parametrize("take_over", [True, False], ids=["takeover_on-iOS18", "takeover_off-iOS18"])
def test_a_weight_budget_lowers_into_delegates_within_it_that_match_eager(take_over, lowered):
    model, example = llm("llama3_2_1b")
    budget = _exported_constant_bytes(model, example) // 3
    part = PlannedCoreMLPartitioner(
        compile_specs=specs("iOS18"), take_over_mutable_buffer=take_over, max_weight_bytes=budget, log_explanations=False
    )
    result = lowered(model, part, example)
    plan = part.last_plan
    assert plan["stats"]["partitions"] >= 3, plan["stats"]
    assert all(c["why"] == "max_weight_bytes" for c in plan["cuts"]) and plan["cuts"], plan["cuts"]
    # Measured from what was lowered, not from the plan: each delegate's own program.
    held = [constant_bytes(m.original_module) for m in lowered_modules(result.program)]
    assert len(held) == plan["stats"]["partitions"]
    assert max(held) <= budget, (held, budget)
    assert held == [p["weight_bytes"] for p in plan["partitions"]]
    assert_planned_outcome(model, llm_steps(), plan, result, tolerance=1e-3)


def _tags_up_to_renaming(a: dict, b: dict, names) -> list:
    """Nodes of ``names`` whose tags in ``a`` and ``b`` disagree under the one renaming that maps
    the first tag seen for each node onto the other's (CPU only to CPU)."""
    forward, backward, differ = {}, {}, []
    for n in names:
        x, y = a[n], b[n]
        if (x is None) != (y is None) or forward.setdefault(x, y) != y or backward.setdefault(y, x) != x:
            differ.append((n, x, y))
    return differ


def test_cuts_by_module_path_split_where_graph_breaks_do():
    model, example = llm("llama3_2_1b")
    last = len(model.layers) - 1
    broken = copy.deepcopy(model)
    broken.layers[0] = _GraphBreak(broken.layers[0], before=True)
    broken.layers[last] = _GraphBreak(broken.layers[last], before=False)
    from executorch.exir import EdgeCompileConfig, to_edge_transform_and_lower

    def planned(m, **cuts):
        part = PlannedCoreMLPartitioner(compile_specs=specs("iOS18"), take_over_mutable_buffer=True, log_explanations=False, **cuts)
        program = torch.export.export(copy.deepcopy(m).eval().requires_grad_(False), example, strict=False)
        manager = to_edge_transform_and_lower(
            program, partitioner=[part], compile_config=EdgeCompileConfig(_check_ir_validity=False)
        )
        assert len(lowered_modules(manager.exported_program())) == part.last_plan["stats"]["partitions"]
        return part.last_plan

    with_breaks = planned(broken)
    with_cuts = planned(model, cut_before=["layers.0"], cut_after=[f"layers.{last}"])
    # What precedes the first block (the embedding lookup, the rope tables' slices) is delegated
    # or not alike in both; a cut is reported only where a delegate would otherwise span it.
    whys = [c["why"] for c in with_cuts["cuts"]]
    assert "cut_after" in whys and set(whys) <= {"cut_before", "cut_after"}, with_cuts["cuts"]
    assert with_breaks["stats"]["partitions"] == with_cuts["stats"]["partitions"] >= 2
    shared = [n for n in with_cuts["node_tags"] if n in with_breaks["node_tags"]]
    assert len(shared) > 0.9 * len(with_cuts["node_tags"])
    assert _tags_up_to_renaming(with_breaks["node_tags"], with_cuts["node_tags"], shared) == []
    # Without the cuts the same model is one delegate: the cuts, not the model, split it.
    assert planned(model)["stats"]["partitions"] == 1


def test_budgets_reach_the_planner_from_every_entry():
    part = PlannedCoreMLPartitioner(max_weight_bytes="2GiB", max_ops=500, cut_after="layers.*")
    assert part.chunking == {"max_weight_bytes": "2GiB", "max_ops": 500, "cut_after": ["layers.*"]}
    with pytest.raises(ValueError, match="not a byte size"):
        PlannedCoreMLPartitioner(max_weight_bytes="lots")
