"""Whole models, as executorch's backend model suite lowers them (issue #40, docs/conversion.md):
stock CoreMLPartitioner and the drop-in side by side, each case's own lowering in full
(``to_edge_transform_and_lower`` + ``to_executorch``, iOS15, the suite's edge config).

The operator suite cannot show what goes wrong here: each of its cases is one op between a model's
inputs and outputs. Inside a whole model a probe's boundary is not a model's, and coremltools takes
there what it refuses at a model's inputs and outputs: rank-6 window views (MaxViT), sizes that are
expressions of symbols (any convolution network with a dynamic height). A probe must refuse neither;
a plan must never put either at a partition's boundary (BOUNDARY_VALUES). The full suite, every
case, is scripts/backend_suite.py's (its figures in docs/conversion.md); these are the classes it
found, on its fastest cases."""

from __future__ import annotations

import copy

import coremltools as ct
import pytest
import torch

from executorch.backends.apple.coreml.compiler import CoreMLBackend
from executorch.backends.apple.coreml.partition import CoreMLPartitioner
from executorch.exir import EdgeCompileConfig, to_edge_transform_and_lower
from partition_planner import PlannedCoreMLPartitioner
from partition_planner.conversion import ConversionProbes, VerdictCache
from partition_planner.device import delegated_ops, lowered_modules, run_steps
from partition_planner.export import export_graph_text
from partition_planner.testing import backend_suite_cases, suite_dynamic_shapes, vision


class Lowered:
    """One side of a case, as the suite lowers it: its delegates and their ops, the partitioner,
    and the largest difference from eager relative to eager's largest value, measured (through each
    delegate's original sub-program) before ``to_executorch``, which the lowering then passes."""

    def __init__(self, make, exported, model, inputs):
        self.partitioner = make(compile_specs=CoreMLBackend.generate_compile_specs(minimum_deployment_target=ct.target.iOS15))
        manager = to_edge_transform_and_lower(
            copy.deepcopy(exported), partitioner=[self.partitioner], compile_config=EdgeCompileConfig(_check_ir_validity=False)
        )
        program = manager.exported_program()
        self.delegates = len(lowered_modules(program))
        self.ops = delegated_ops(program)
        self.views = [
            n
            for m in lowered_modules(program)
            for n in m.original_module.graph.nodes
            if isinstance(n.meta.get("val"), torch.Tensor) and n.meta["val"].dim() == 6
        ]
        (got,), _ = run_steps(program, [inputs])
        want = copy.deepcopy(model).eval()(*inputs)
        self.error = float((got.double() - want.double()).abs().max() / max(1.0, float(want.double().abs().max())))
        manager.to_executorch()

    def said(self, *rules) -> list[dict]:
        return [e for e in self.partitioner.explanations() if e["rule"] in rules and e["scope"] == "plan"]


def _case(name: str):
    (case,) = [c for c in backend_suite_cases("models", name)]
    _, model, inputs, dynamic_shapes = case
    return model, inputs, torch.export.export(copy.deepcopy(model), inputs, dynamic_shapes=dynamic_shapes, strict=True)


@pytest.mark.parametrize(
    "case",
    [
        # Sizes that are expressions of symbols inside (8*s89): refused alone at a probe's boundary.
        "test_mobilenet_v3_small[use_dynamic_shapes=True",
        "test_squeezenet1_1[use_dynamic_shapes=True",
        "test_alexnet[use_dynamic_shapes=False",
    ],
)
def test_a_case_stock_lowers_is_lowered_alike(case):
    model, inputs, exported = _case(case)
    stock = Lowered(CoreMLPartitioner, exported, model, inputs)
    planned = Lowered(PlannedCoreMLPartitioner, exported, model, inputs)
    assert planned.delegates == stock.delegates == 1
    assert planned.ops == stock.ops
    assert not planned.said("CONVERTIBLE", "BOUNDARY_VALUES")
    assert planned.error < 1e-4


def test_rank_6_window_views_are_not_refused_and_stay_inside_one_delegate():
    """MaxViT's window attention views its image as rank-6 windows. Probed alone, each view or
    permute had a rank-6 input or output at the probe's boundary, which the Core ML backend refuses:
    764 nodes of torchvision's maxvit_t refused, 174 partitions, and a lowering that aborted where
    stock's succeeds. Here torchvision's MaxViT, shrunk (partition_planner.testing.vision)."""
    model, inputs, _ = vision("maxvit_tiny")
    exported = torch.export.export(copy.deepcopy(model), inputs, strict=True)
    stock = Lowered(CoreMLPartitioner, exported, model, inputs)
    planned = Lowered(PlannedCoreMLPartitioner, exported, model, inputs)
    assert planned.delegates == stock.delegates == 1
    assert planned.ops == stock.ops
    assert planned.views, "the rank-6 views are inside the delegate"
    assert not planned.said("CONVERTIBLE", "BOUNDARY_VALUES")
    assert planned.error < 1e-4


def test_an_op_that_fails_on_unknown_sizes_is_kept_off_with_all_tied_to_it_and_the_model_lowers():
    """alexnet with the suite's dynamic height and width: coremltools converts its adaptive pool
    only for known sizes, so stock aborts in coremltools. The drop-in's probe meets the pool as it
    is in context (sizes unknown) and refuses it; what makes or reads the values of inner sizes
    (expressions of the input's symbols, which no partition may take or give) runs on CPU with it,
    and the rest (the classifier) is delegated. The values are eager's."""
    model, inputs, exported = _case("test_alexnet[use_dynamic_shapes=True")
    with pytest.raises(Exception, match="Adaptive pooling is only supported when input tensor size is known"):
        Lowered(CoreMLPartitioner, exported, model, inputs)
    planned = Lowered(PlannedCoreMLPartitioner, exported, model, inputs)
    assert planned.delegates == 1
    assert "aten.linear.default" in planned.ops
    assert not [op for op in planned.ops if "conv" in op]
    assert "Adaptive pooling is only supported" in planned.said("CONVERTIBLE")[-1]["message"]
    assert "no delegate can take at its boundary" in planned.said("BOUNDARY_VALUES")[0]["message"]
    # Ops kept whole for Core ML and then run on CPU would have no kernel there: decomposed.
    assert planned.partitioner.decomposed_for_cpu
    assert planned.error < 1e-4


def test_probes_of_a_program_are_converted_side_by_side_and_each_refusal_costs_one_more(tmp_path):
    """Group testing: one conversion for every probe of a program that converts; a failing member
    is found where the converter stops, and the rest converted again after it. Two refusals here
    (max pools with dilation 2, coremltools 9.0 refuses each), in one program of many ops: three
    conversions."""

    class Pools(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = torch.nn.Conv2d(3, 8, 3)

        def forward(self, x):
            y = torch.relu(self.conv(x))
            a = torch.nn.functional.max_pool2d(y, 2, dilation=2)
            b = torch.nn.functional.max_pool2d(y, 3, dilation=2)
            return torch.sigmoid(a).sum() + torch.tanh(b).sum() + y.mean()

    probes = {}

    class Probed(PlannedCoreMLPartitioner):
        """Probes the program ``partition()`` receives, with a cache of the test's own."""

        def partition(self, exported_program):
            probes["alone"] = ConversionProbes(self.delegation_spec.compile_specs, True, VerdictCache(tmp_path / "v.jsonl"))
            export_graph_text(exported_program, self, digests=False, probes=probes["alone"])
            return super().partition(exported_program)

    part = Probed(compile_specs=CoreMLBackend.generate_compile_specs(minimum_deployment_target=ct.target.iOS15))
    exported = torch.export.export(Pools().eval(), (torch.randn(1, 3, 16, 16),), strict=True)
    to_edge_transform_and_lower(exported, partitioner=[part], compile_config=EdgeCompileConfig(_check_ir_validity=False))
    probes = probes["alone"]
    refused = sorted(n.name for n in probes.refused)
    assert len(refused) == 2 and all("max_pool2d_with_indices" in n for n in refused), refused
    assert probes.signatures > 5
    # Alone: one conversion finds the first, one more the second, one more the rest. Then the two
    # beside their neighbours, side by side: one finds the first, one more the second.
    assert probes.conversions == 3 + 2, probes.conversions


def test_a_view_sized_by_symbolic_scalars_is_probed_with_them_computed_inside(tmp_path):
    """A reshape of a value of inner dynamic sizes takes its sizes as scalars (``sym_size`` of the
    value, arithmetic on them), which no probe may take as inputs: they are computed inside the
    probe from the tensor they measure, and the reshape is judged as in context."""

    class Pooled(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = torch.nn.Conv2d(3, 8, 3, stride=2, padding=1)

        def forward(self, x):
            y = torch.relu(self.conv(x))
            return y.reshape(y.shape[1], y.shape[2] * y.shape[3]).mean(-1)

    model, inputs = Pooled().eval(), (torch.randn(1, 3, 64, 64),)
    exported = torch.export.export(model, inputs, dynamic_shapes=suite_dynamic_shapes(), strict=True)
    stock = Lowered(CoreMLPartitioner, exported, model, inputs)
    planned = Lowered(PlannedCoreMLPartitioner, exported, model, inputs)
    assert planned.delegates == stock.delegates == 1
    assert planned.ops == stock.ops
    assert not planned.said("CONVERTIBLE", "BOUNDARY_VALUES")
    assert planned.error < 1e-4
