"""Plans the converter accepts: coremltools asked itself (docs/conversion.md).

- ``ConversionProbes``: before planning, each distinct signature of a node the Core ML support
  check accepts is converted by coremltools' frontend, all side by side (``batch.py``); verdicts
  are kept on disk (``clear_cache``, ``cache_root``).
- ``failing_ops``: each planned partition converted, a failing one bisected to the op to blame.
- ``Verdict``: what the bridge document's ``conversion`` field carries.

``python -m partition_planner.conversion`` shows or clears the cache.
"""

from .cache import VerdictCache, cache_root, clear_cache
from .probes import ConversionProbes
from .verdict import PROBE, VERIFICATION, Verdict
from .verify import Culprit, failing_ops

__all__ = [
    "ConversionProbes",
    "Culprit",
    "PROBE",
    "VERIFICATION",
    "Verdict",
    "VerdictCache",
    "cache_root",
    "clear_cache",
    "failing_ops",
]
