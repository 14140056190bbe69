"""Models that reproduce the stock Core ML partitioner's failures, for tests and for regenerating
data/ (scripts/make_data.py)."""

from __future__ import annotations

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
