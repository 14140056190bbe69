"""Models that reproduce the stock Core ML partitioner's failures, for tests and for regenerating
data/ (scripts/make_data.py)."""

from __future__ import annotations

import importlib
import inspect
import itertools
import pkgutil
import unittest

import torch


class SliceCache(torch.nn.Module):
    """The seed report's repro: an in-place update of a slice of a registered buffer."""

    def __init__(self, n: int = 16, d: int = 8):
        super().__init__()
        self.register_buffer("cache", torch.zeros(1, n, d))

    def forward(self, x, pos):
        self.cache[:1].mul_(0.9)
        self.cache[:1].copy_(self.cache[:1] + x.unsqueeze(1))
        return self.cache.sum(dim=1) + x


class WholeCache(torch.nn.Module):
    """Its twin from the seed report: the whole buffer updated with index_put_."""

    def __init__(self, n: int = 16, d: int = 8):
        super().__init__()
        self.register_buffer("cache", torch.zeros(1, n, d))

    def forward(self, x, pos):
        self.cache.index_put_((torch.tensor([0]), pos), x)
        return self.cache.sum(dim=1) + x


def seed_steps(count: int = 3, seed: int = 0):
    """Decode-like inputs for the seed models: one (x, pos) per step."""
    g = torch.Generator().manual_seed(seed)
    return [(torch.randn(1, 8, generator=g), torch.tensor([i])) for i in range(count)]


# Real architectures from executorch's examples.models.llama, built from a params JSON with random
# weights: the layer counts and layer types of the released models, widths shrunk (the model hub
# cannot be reached here). The params files are in partition_planner/params/.
LLMS = {
    # 24 layers: three gated delta-net (linear attention with conv and recurrent state) then one
    # full attention with a KV cache, repeated.
    "qwen3_5_0_8b": "qwen3_5_0_8b_small.json",
    # 16 layers: short-conv blocks with conv state and full attention with a KV cache.
    "lfm2_5_350m": "lfm2_5_350m_small.json",
    # 16 layers of attention with a KV cache.
    "llama3_2_1b": "llama3_2_1b_small.json",
}


def llm(name: str, max_seq_len: int = 16, seed: int = 0, n_layers: int | None = None):
    """The eager model (random weights, seeded) and its example inputs ``(tokens, {"input_pos": ...})``.

    ``n_layers`` builds a deeper or shallower model of the same architecture: the released layer
    types repeated in their order (Qwen3.5 at 64 layers: 48 gated delta-net, 16 full attention).

    Built the way ``examples.models.llama.model.Llama2Model`` builds it (same ModelArgs, same
    ``construct_transformer``), but on CPU: Llama2Model constructs on the meta device and only a
    checkpoint fills the buffers, so without one the rope tables, masks and caches hold whatever
    memory held. Here every buffer is computed by its module and every parameter is drawn from a
    seeded generator.
    """
    import json
    from importlib import resources

    from executorch.examples.models.llama.llama_transformer import construct_transformer
    from executorch.examples.models.llama.model_args import ModelArgs

    params = json.loads((resources.files("partition_planner") / "params" / LLMS[name]).read_text())
    if n_layers is not None:
        params["n_layers"] = n_layers
        if "layer_types" in params:
            pattern = params["layer_types"]
            params["layer_types"] = [pattern[i % len(pattern)] for i in range(n_layers)]
    args = ModelArgs(
        max_seq_len=max_seq_len,
        max_context_len=max_seq_len,
        max_batch_size=1,
        use_kv_cache=True,
        # Core ML lowers the plain KV cache (index_put into buffers), not executorch's custom sdpa op.
        use_sdpa_with_kv_cache_op=False,
        enable_dynamic_shape=False,
        **params,
    )
    if args.use_scaled_rope:
        args.rope_scale_factor = 32  # as Llama2Model sets it for Llama 3.2
    model = construct_transformer(args).eval().requires_grad_(False)
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for pname, p in model.named_parameters():
            noise = torch.randn(p.shape, generator=g, dtype=torch.float32).to(p.dtype)
            p.copy_(1.0 + 0.02 * noise if "norm" in pname else 0.02 * noise)
    return model, (torch.tensor([[1]], dtype=torch.long), {"input_pos": torch.tensor([0], dtype=torch.long)})


def llm_steps(count: int = 3, vocab: int = 256, seed: int = 0):
    """Decode steps: one token at positions 0, 1, 2, ..."""
    g = torch.Generator().manual_seed(seed)
    return [
        (torch.randint(0, vocab, (1, 1), generator=g), {"input_pos": torch.tensor([i])})
        for i in range(count)
    ]


# export_llm's arguments for the topologies above as a user passes them (the command): a
# KV cache, static shapes, Core ML at iOS18, 16 positions. Add base.params and export.output_dir.
EXPORT_LLM_ARGUMENTS = [
    "base.model_class=llama3",
    "model.use_kv_cache=true",
    "model.enable_dynamic_shape=false",
    "backend.coreml.enabled=true",
    "backend.coreml.ios=18",
    "export.max_seq_length=16",
    "export.max_context_length=16",
]


def coreml_delegate_calls(pte) -> int:
    """Core ML delegate calls of a ``.pte``'s ``forward``, read from the file (a ``Path``):
    executorch's runtime loads the program (parses and verifies it; Core ML delegates cannot
    execute on Linux), and its serializer reads the instructions."""
    from executorch.exir._serialize._program import deserialize_pte_binary
    from executorch.runtime import Runtime

    data = pte.read_bytes()
    program = Runtime.get().load_program(data)
    if "forward" not in program.method_names:
        raise ValueError(f"{pte} has no forward method: {sorted(program.method_names)}")
    pte_file = deserialize_pte_binary(data)
    plan = next(p for p in getattr(pte_file, "program", pte_file).execution_plan if p.name == "forward")
    calls = [
        plan.delegates[i.instr_args.delegate_index].id
        for chain in plan.chains
        for i in chain.instructions
        if type(i.instr_args).__name__ == "DelegateCall"
    ]
    return calls.count("CoreMLBackend")


# Ops the Core ML support check accepts and coremltools 9.0 then refuses, one per class found in
# executorch's backend operator suite (scripts/backend_suite.py, docs/conversion.md), each between
# ops that convert so that there is something to delegate on either side: (model, example inputs).
class _Between(torch.nn.Module):
    """``relu`` before the refused op and ``x * 2 + 1`` after it (after its first output, for an op
    with several, the others returned as they are)."""

    def __init__(self, refused: torch.nn.Module):
        super().__init__()
        self.refused = refused

    def forward(self, x):
        y = self.refused(torch.relu(x))
        if isinstance(y, tuple):
            return (y[0] * 2 + 1,) + y[1:]
        return y * 2 + 1


class _IndexPutTwoIndices(torch.nn.Module):
    """``index_put`` with two index tensors that broadcast ((1,) against (3,))."""

    def forward(self, x, rows, cols, values):
        y = torch.relu(x)
        return torch.index_put(y, (rows, cols), values) * 2 + 1


def conversion_failures() -> dict:
    """Each class of op coremltools refuses although the support check accepts it, as a small model
    with example inputs, by name."""
    torch.manual_seed(0)
    image = torch.randn(1, 4, 12, 12)
    return {
        "max_pool_dilation": (_Between(torch.nn.MaxPool2d(3, dilation=2)), (image,)),
        "conv_transpose_output_padding": (
            _Between(torch.nn.ConvTranspose2d(4, 4, 3, stride=2, output_padding=1)),
            (image,),
        ),
        "conv_circular_padding": (_Between(torch.nn.Conv2d(4, 4, 3, padding=1, padding_mode="circular")), (image,)),
        "avg_pool3d_ceil_mode_with_padding": (
            _Between(torch.nn.AvgPool3d(3, ceil_mode=True, count_include_pad=True)),
            (torch.randn(1, 2, 8, 8, 8),),
        ),
        "index_put_two_indices": (
            _IndexPutTwoIndices(),
            (torch.randn(3, 2), torch.tensor([1]), torch.tensor([0, 0, 1]), torch.tensor([5.0, 10.0, 15.0])),
        ),
        # Returned as they are, as in the suite: an op between changes what the converter sees.
        "adaptive_max_pool_indices": (torch.nn.AdaptiveMaxPool2d(5, return_indices=True), (torch.randn(1, 8, 20, 20),)),
    }


class RefusedWriter(torch.nn.Module):
    """A buffer whose writer coremltools refuses: the cache is updated with ``index_put_`` and two
    index tensors that broadcast, which the support check accepts. The rest converts."""

    def __init__(self, rows: int = 4, d: int = 8):
        super().__init__()
        self.register_buffer("cache", torch.zeros(rows, d))
        self.proj = torch.nn.Linear(d, d)

    def forward(self, x, row, cols):
        y = self.proj(x)
        self.cache.index_put_((row, cols), y[0, :3])
        return (self.cache.sum(dim=0) * 0.5 + y).relu()


def refused_writer_steps(count: int = 3, seed: int = 0):
    """Decode-like inputs for ``RefusedWriter``: one ``(x, row, cols)`` per step."""
    g = torch.Generator().manual_seed(seed)
    return [(torch.randn(1, 8, generator=g), torch.tensor([i % 4]), torch.tensor([0, 2, 5])) for i in range(count)]


class ConversionFailures(torch.nn.Module):
    """Ops coremltools refuses although the support check accepts them, among ops it converts, and a
    buffer whose writer it refuses: a max pool with dilation (decomposed, then refused as
    ``max_pool2d_with_indices``) and ``index_put_`` with two broadcasting index tensors writing the
    cache. data/*/conversion_failures_ios18.json is its bridge document."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(4, 4, 3, padding=1)
        self.pool = torch.nn.MaxPool2d(3, dilation=2)
        self.proj = torch.nn.Linear(36, 8)
        self.register_buffer("cache", torch.zeros(4, 8))

    def forward(self, x, row, cols):
        y = self.pool(self.conv(torch.relu(x)))
        h = self.proj(y.flatten(1))
        self.cache.index_put_((row, cols), h[0, :3])
        return (self.cache.sum(dim=0) * 0.5 + h).relu()


def conversion_failures_steps(count: int = 3, seed: int = 0):
    """Inputs for ``ConversionFailures``: one ``(x, row, cols)`` per step."""
    g = torch.Generator().manual_seed(seed)
    return [
        (torch.randn(1, 4, 12, 12, generator=g), torch.tensor([i % 4]), torch.tensor([0, 2, 5])) for i in range(count)
    ]


# Vision models as executorch's backend model suite lowers them (backends/test/suite/models): a
# 224x224 image, and for dynamic shapes a height and width of 16 to 256 in steps of 16. Inside such a
# program a strided convolution's sizes are expressions of those symbols (``8*s0``), which no Core
# ML model's input or output may have; window attention (MaxViT, Swin) views its image as rank-6
# windows, which no input or output may be either (BOUNDARY_VALUES, docs/rules.md).
def suite_dynamic_shapes():
    from torch.export import Dim

    return ({2: Dim("height", min=1, max=16) * 16, 3: Dim("width", min=1, max=16) * 16},)


def vision(name: str, dynamic: bool = False, seed: int = 0):
    """``(model, inputs, dynamic_shapes)``: a torchvision model (random weights, seeded) with the
    suite's inputs. ``maxvit_tiny`` is torchvision's MaxViT with its widths and depths shrunk (two
    blocks of 16 and 32 channels, 4x4 windows) and a 64x64 image: its window attention keeps the
    rank-6 views of the released model."""
    import torchvision

    torch.manual_seed(seed)
    if name == "maxvit_tiny":
        model = torchvision.models.MaxVit(
            input_size=(64, 64),
            stem_channels=8,
            partition_size=4,
            block_channels=[16, 32],
            block_layers=[1, 1],
            head_dim=8,
            stochastic_depth_prob=0.0,
            num_classes=10,
        )
        inputs = (torch.randn(1, 3, 64, 64),)
    else:
        model = getattr(torchvision.models, name)()
        inputs = (torch.randn(1, 3, 224, 224),)
    return model.eval(), inputs, suite_dynamic_shapes() if dynamic else None


# executorch's backend test suites (``backends/test/suite``, shipped in the wheel), case by case as
# their Core ML flow builds them: scripts/backend_suite.py lowers every case both ways, and the e2e
# tests some of them.
def _parametrizations(test) -> list[dict]:
    """Each set of arguments pytest would call ``test`` with, from its ``parametrize`` marks (the
    runner aside). ``dtype``, where not parametrized, is float32, as the suite's flows run it."""
    grids = []
    for mark in getattr(test, "pytestmark", []):
        if mark.name != "parametrize":
            continue
        names, values = mark.args[0], mark.args[1]
        names = [n.strip() for n in names.split(",")] if isinstance(names, str) else list(names)
        grids.append([dict(zip(names, v if len(names) > 1 else (v,))) for v in values])
    parameters = inspect.signature(test).parameters
    combos = []
    for combo in itertools.product(*grids) if grids else [()]:
        kwargs = {k: v for part in combo for k, v in part.items()}
        if "dtype" in parameters and "dtype" not in kwargs:
            kwargs["dtype"] = torch.float32
        combos.append(kwargs)
    return combos


def backend_suite_cases(suite: str, only: str = "", skipped: list | None = None):
    """(name, model, inputs, dynamic_shapes) of every case of ``suite`` (``operators`` or
    ``models``) whose name holds ``only``, in module and function order: each test function called,
    once per parametrization, with a runner that records what it is handed instead of running it. A
    module that cannot be imported (torchaudio has no release for every torch) goes to ``skipped``
    with the reason."""
    import pytest
    from executorch.backends.test.suite.flows.coreml import COREML_TEST_FLOW

    package = importlib.import_module(f"executorch.backends.test.suite.{suite}")

    class Recorder:
        _flow = COREML_TEST_FLOW

        def __init__(self):
            self.seen = []

        def lower_and_run_model(self, model, inputs, generate_random_test_inputs=True, dynamic_shapes=None):
            self.seen.append((model, inputs, dynamic_shapes))

    for info in pkgutil.iter_modules(package.__path__):
        if not info.name.startswith("test_"):
            continue
        try:
            module = importlib.import_module(f"{package.__name__}.{info.name}")
        except ImportError as e:
            if skipped is not None:
                skipped.append({"module": info.name, "reason": f"{type(e).__name__}: {e}"})
            continue
        for name, test in sorted(vars(module).items()):
            # The module's own tests, and those ``operators.operator_test`` made from a class of it.
            if not name.startswith("test_") or getattr(test, "__module__", None) not in (module.__name__, package.__name__):
                continue
            for kwargs in _parametrizations(test):
                recorder = Recorder()
                try:
                    torch.manual_seed(0)
                    test(recorder, **kwargs)
                except (pytest.skip.Exception, unittest.SkipTest):
                    pass
                shown = ",".join(f"{k}={v}" for k, v in kwargs.items() if k != "dtype")
                for i, (model, inputs, dynamic_shapes) in enumerate(recorder.seen):
                    case = f"{info.name}::{name}[{shown + ',' if shown else ''}{i}]" if suite == "models" else f"{info.name}::{name}[{i}]"
                    if only in case:
                        yield case, model, inputs, dynamic_shapes
