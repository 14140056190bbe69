"""Seeded random torch programs for comparing the stock Core ML partitioner with its reproduction.

``RandomNet(seed)`` is a straight-line program over ``(2, D)`` float tensors, drawn once from the
seed: each step applies one op to earlier values (mostly recent ones, sometimes any earlier one:
branches and joins), with residual blocks, ops with several outputs read through ``getitem``
(``split``, ``max(dim)``, ``topk``), attention (``scaled_dot_product_attention``, kept whole by
``to_edge_transform_and_lower`` and decomposed by plain ``to_edge``), registered buffers mutated in
place (``index_put_`` at an input position, a slice ``copy_``, a whole ``mul_``) and read, and three
weight matrices shared by every projection. Ops the Core ML partitioner refuses are put at randomly
drawn steps, so that the supported ops fall into several partitions. Every value no step reads is
summed into one of the two outputs, so nothing is dead.
"""

from __future__ import annotations

import random

import torch
import torch.nn.functional as F

D = 8
WEIGHTS = 3
BUFFERS = 2


def _linear(net, a, b, pos, k):
    return F.linear(a, getattr(net, f"w{k}"))


def _residual(net, a, b, pos, k):
    return a + F.linear(torch.relu(a), getattr(net, f"w{k}"))


def _attention(net, a, b, pos, k):
    q, kv = a.view(1, 1, 2, D), b.view(1, 1, 2, D)
    return F.scaled_dot_product_attention(q, kv, kv).view(2, D)


def _split(net, a, b, pos, k):
    left, right = torch.split(a, D // 2, dim=1)
    return torch.cat([right * 2.0, left], dim=1)


def _max_dim(net, a, b, pos, k):
    values, indices = torch.max(a, dim=1, keepdim=True)
    return a - values + indices.to(a.dtype)


def _topk(net, a, b, pos, k):
    values, indices = torch.topk(a, 2, dim=1)
    return a + values.sum(dim=1, keepdim=True) + indices.to(a.dtype).sum(dim=1, keepdim=True)


def _kv_write(net, a, b, pos, k):
    cache = getattr(net, f"cache{k % BUFFERS}")
    cache.index_put_((pos,), a[:1])
    return b + cache[:2]


def _slice_copy(net, a, b, pos, k):
    cache = getattr(net, f"cache{k % BUFFERS}")
    cache[1:3].copy_(a)
    return b + cache[2:]


def _scale(net, a, b, pos, k):
    cache = getattr(net, f"cache{k % BUFFERS}")
    cache.mul_(0.5)
    return a + cache[:2]


def _read(net, a, b, pos, k):
    return a * getattr(net, f"cache{k % BUFFERS}")[2:]


SUPPORTED = {
    "linear": _linear,
    "residual": _residual,
    "relu": lambda net, a, b, pos, k: torch.relu(a),
    "sigmoid": lambda net, a, b, pos, k: torch.sigmoid(a),
    "tanh": lambda net, a, b, pos, k: torch.tanh(a),
    "add": lambda net, a, b, pos, k: a + b,
    "mul": lambda net, a, b, pos, k: a * b,
    "sub": lambda net, a, b, pos, k: a - b,
    "layer_norm": lambda net, a, b, pos, k: F.layer_norm(a, (D,)),
    "attention": _attention,
    "split": _split,
    "max_dim": _max_dim,
    "topk": _topk,
    "kv_write": _kv_write,
    "slice_copy": _slice_copy,
    "scale": _scale,
    "read": _read,
}

# Ops executorch's CoreMLPartitioner refuses (its _UNSUPPORTED_OP_TARGETS and support overrides).
UNSUPPORTED = {
    "acosh": lambda net, a, b, pos, k: torch.acosh(a.abs() + 1.0),
    "asinh": lambda net, a, b, pos, k: torch.asinh(a),
    "diagonal": lambda net, a, b, pos, k: a + torch.diagonal(a).unsqueeze(1),
    "add_alpha": lambda net, a, b, pos, k: torch.add(a, b, alpha=2.0),
    "sub_alpha": lambda net, a, b, pos, k: torch.sub(a, b, alpha=0.5),
    "argmax": lambda net, a, b, pos, k: a + torch.argmax(a).to(a.dtype),
    "rand": lambda net, a, b, pos, k: a + torch.rand(2, D),
}

OPS = {**SUPPORTED, **UNSUPPORTED}


class RandomNet(torch.nn.Module):
    def __init__(self, seed: int, steps: int = 20, unsupported: int = 3):
        super().__init__()
        rng = random.Random(seed)
        g = torch.Generator().manual_seed(seed)
        for k in range(WEIGHTS):
            self.register_parameter(f"w{k}", torch.nn.Parameter(0.3 * torch.randn(D, D, generator=g)))
        for k in range(BUFFERS):
            self.register_buffer(f"cache{k}", torch.zeros(4, D))
        refused = set(rng.sample(range(steps), unsupported))
        supported = sorted(SUPPORTED)
        self.recipe = []
        for step in range(steps):
            kind = rng.choice(sorted(UNSUPPORTED)) if step in refused else rng.choice(supported)
            count = step + 1  # values so far: the input, then one per step
            near = lambda: rng.randrange(max(0, count - 3), count)  # noqa: E731
            a = near() if rng.random() < 0.75 else rng.randrange(count)
            b = near() if rng.random() < 0.5 else rng.randrange(count)
            self.recipe.append((kind, a, b, rng.randrange(WEIGHTS)))
        read = {i for _, a, b, _ in self.recipe for i in (a, b)}
        self.leaves = [i for i in range(1, steps + 1) if i not in read]
        self.kinds = [kind for kind, *_ in self.recipe]

    def forward(self, x, pos):
        values = [x]
        for kind, a, b, k in self.recipe:
            values.append(OPS[kind](self, values[a], values[b], pos, k))
        leaves = [values[i] for i in self.leaves]
        half = max(1, len(leaves) // 2)
        return sum(leaves[:half]), sum(leaves[half:]) if leaves[half:] else values[-1] * 2.0

    @staticmethod
    def example():
        return (torch.randn(2, D, generator=torch.Generator().manual_seed(1)), torch.tensor([1]))
