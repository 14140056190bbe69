"""Regenerates data/ from real executorch: each model exported through the stock Core ML
partitioner, written as bridge JSON v1 with the stock tags, under data/executorch-VERSION/.

    python scripts/make_data.py [--out data]

Run it once in a venv per supported executorch version (with torch, coremltools and the
partition_planner package installed; see README). The graphs record the versions that made them
under "producer".
"""

from __future__ import annotations

import argparse
import copy
import json
import pathlib
from importlib import metadata

import coremltools as ct
import torch
from executorch.backends.apple.coreml.compiler import CoreMLBackend
from executorch.backends.apple.coreml.partition import CoreMLPartitioner
from executorch.exir import to_edge_transform_and_lower

from partition_planner import PlannedCoreMLPartitioner, export_graph
from partition_planner.testing import (
    LLMS,
    ConversionFailures,
    SliceCache,
    WholeCache,
    conversion_failures_steps,
    llm,
    seed_steps,
    vision,
)


class _Captured(Exception):
    pass


def _specs(target):
    return CoreMLBackend.generate_compile_specs(
        compute_precision=ct.precision.FLOAT16,
        compute_unit=ct.ComputeUnit.ALL,
        minimum_deployment_target=target,
    )


def _captured(model: torch.nn.Module, inputs, partitioner, captured: dict, dynamic_shapes=None) -> dict:
    """Lowers ``model`` with ``partitioner``, whose ``partition()`` fills ``captured["graph"]`` and
    raises ``_Captured``; returns that graph. With ``dynamic_shapes``, exported strictly with them,
    as executorch's model suite exports."""
    model = model.eval().requires_grad_(False)
    ep = torch.export.export(model, inputs, dynamic_shapes=dynamic_shapes, strict=dynamic_shapes is not None)
    try:
        to_edge_transform_and_lower(ep, partitioner=[partitioner])
    except _Captured:
        pass
    return captured["graph"]


def stock_graph(model: torch.nn.Module, inputs, *, take_over: bool, target, name: str, dynamic_shapes=None) -> dict:
    """The bridge JSON of `model` exactly as the stock partitioner tags it inside
    to_edge_transform_and_lower (which first keeps the ops the partitioner asks not to decompose)."""
    captured = {}

    class Capture(CoreMLPartitioner):
        def partition(self, exported_program):
            result = super().partition(exported_program)
            captured["graph"] = export_graph(result.tagged_exported_program, self, model=name)
            raise _Captured

    partitioner = Capture(compile_specs=_specs(target), take_over_mutable_buffer=take_over)
    return _captured(model, inputs, partitioner, captured, dynamic_shapes)


def planned_program_graph(model: torch.nn.Module, inputs, *, take_over: bool, target, name: str, dynamic_shapes=None) -> dict:
    """The bridge JSON of the program the drop-in plans inside to_edge_transform_and_lower (the
    ops the converter refuses whole let decompose), tagged by the stock partitioner's own
    ``partition()`` on it, with the drop-in's conversion verdicts on its nodes and the ops it let
    decompose (docs/conversion.md)."""
    captured = {}

    class Capture(PlannedCoreMLPartitioner):
        def partition(self, exported_program):
            result = CoreMLPartitioner.partition(self, exported_program)
            captured["graph"] = export_graph(
                result.tagged_exported_program,
                self,
                model=name,
                probes=self._conversion_probes(),
                decomposed=self.decomposed_for_conversion,
            )
            raise _Captured

    partitioner = Capture(compile_specs=_specs(target), take_over_mutable_buffer=take_over)
    return _captured(model, inputs, partitioner, captured, dynamic_shapes)


# Vision models of executorch's model suite (partition_planner.testing.vision), at the suite's
# target: each the program the drop-in plans, with its conversion verdicts, tagged by stock.
VISION = {
    # Dynamic height and width: sizes that are expressions of symbols everywhere inside, and an
    # adaptive pool coremltools converts only for known sizes.
    "alexnet_dynamic_ios15": ("alexnet", True),
    "mobilenet_v3_small_dynamic_ios15": ("mobilenet_v3_small", True),
    # Rank-6 windows in every block.
    "maxvit_tiny_ios15": ("maxvit_tiny", False),
}


def vision_graphs() -> dict:
    graphs = {}
    for label, (name, dynamic) in VISION.items():
        model, inputs, dynamic_shapes = vision(name, dynamic)
        graphs[label] = planned_program_graph(
            model,
            inputs,
            take_over=True,
            target=ct.target.iOS15,
            name=f"torchvision {name} ({'dynamic' if dynamic else 'static'} shapes, random weights)",
            dynamic_shapes=dynamic_shapes,
        )
    return graphs


def untag_writers(graph: dict) -> dict:
    """The fix the seed report tried and would not send: drop the tag of every buffer writer."""
    out = copy.deepcopy(graph)
    writers = set(out["graph_signature"]["buffers_to_mutate"])
    for node in out["nodes"]:
        if node["name"] in writers:
            node["delegation_tag"] = None
    out["producer"]["variant"] = "stock tagging with every buffer writer untagged"
    return out


# LLMs also written with every buffer writer untagged after the stock pass (`untag_writers`): the
# seed report's attempted fix at LLM size, whose stock tags have cycles (ACYCLIC findings) beside
# the states the planner must refuse (pictures and explanations are tested on it).
WRITERS_UNTAGGED = ("qwen3_5_0_8b",)


def write_variants(out: pathlib.Path) -> None:
    """The writer-untagged variants, made from the stock documents already in `out` (no export)."""
    for name in WRITERS_UNTAGGED:
        stock = json.loads((out / f"{name}_takeover_on_ios18.json").read_text())
        write_graph(out / f"{name}_writers_untagged_ios18.json", untag_writers(stock))


def write_graph(path: pathlib.Path, graph: dict) -> None:
    # Small graphs indented for reading, LLM graphs one node a line.
    if len(graph["nodes"]) < 100:
        text = json.dumps(graph, indent=1)
    else:
        nodes = ",\n  ".join(json.dumps(n, separators=(",", ":")) for n in graph["nodes"])
        rest = {k: v for k, v in graph.items() if k != "nodes"}
        text = json.dumps(rest, indent=1)[:-2] + ',\n "nodes": [\n  ' + nodes + "\n ]\n}"
    path.write_text(text + "\n")
    print(f"wrote {path} ({len(graph['nodes'])} nodes)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", default="data")
    parser.add_argument("--seed-only", action="store_true", help="only the small models: the seed report's and ConversionFailures")
    parser.add_argument("--vision-only", action="store_true", help="only the vision models of executorch's model suite (needs torchvision)")
    parser.add_argument(
        "--variants-only",
        metavar="VERSION",
        help="only the writer-untagged variants, from data/executorch-VERSION's stock documents",
    )
    args = parser.parse_args()
    if args.variants_only:
        write_variants(pathlib.Path(args.out) / f"executorch-{args.variants_only}")
        return
    out = pathlib.Path(args.out) / f"executorch-{metadata.version('executorch')}"
    out.mkdir(parents=True, exist_ok=True)
    if args.vision_only:
        for label, graph in vision_graphs().items():
            write_graph(out / f"{label}.json", graph)
        return
    example = seed_steps(1)[0]
    graphs = {
        "seed_slice_ios18": stock_graph(SliceCache(), example, take_over=True, target=ct.target.iOS18, name="seed SliceCache"),
        # The seed report's setting: take-over off (executorch 1.4 still tags the buffer).
        "seed_slice_takeover_off_ios17": stock_graph(SliceCache(), example, take_over=False, target=ct.target.iOS17, name="seed SliceCache"),
        "seed_whole_ios18": stock_graph(WholeCache(), example, take_over=True, target=ct.target.iOS18, name="seed WholeCache"),
    }
    graphs["seed_slice_writer_untagged"] = untag_writers(graphs["seed_slice_ios18"])
    graphs["conversion_failures_ios18"] = planned_program_graph(
        ConversionFailures(),
        conversion_failures_steps(1)[0],
        take_over=True,
        target=ct.target.iOS18,
        name="ConversionFailures (ops coremltools refuses)",
    )
    if not args.seed_only:
        graphs.update(vision_graphs())
        for name in LLMS:
            model, example = llm(name)
            for take_over in (True, False):
                label = f"{name}_{'takeover_on' if take_over else 'takeover_off'}_ios18"
                graphs[label] = stock_graph(model, example, take_over=take_over, target=ct.target.iOS18, name=f"{name} (shrunk widths, random weights)")
    for name, graph in graphs.items():
        write_graph(out / f"{name}.json", graph)
    if not args.seed_only:
        write_variants(out)


if __name__ == "__main__":
    main()
