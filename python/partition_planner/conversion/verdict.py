"""A conversion verdict: whether coremltools converts a node, how that was found, and the
converter's first error line when it does not. It is what the bridge document's ``conversion``
field carries (docs/bridge-json.md)."""

from __future__ import annotations

from typing import NamedTuple

PROBE = "probe"
VERIFICATION = "verification"


class Verdict(NamedTuple):
    converts: bool
    # PROBE: the node converted alone; VERIFICATION: found by converting a planned partition.
    found_by: str
    # ``coremltools 9.0``: the converter that gave the verdict.
    converter: str
    # The op with the literal arguments that differ from its schema's defaults.
    call: str
    # The converter's first error line (exception type first); None when it converts.
    error: str | None = None

    def to_json(self, *, whole: bool = False) -> dict:
        """As the bridge document carries it: a verdict of conversion says how it was found, one
        of refusal also who refused what and why (most nodes convert, and a large program's
        document would otherwise grow by a tenth). ``whole``: every member, as the cache keeps it."""
        out = {"converts": self.converts, "found_by": self.found_by}
        if whole or not self.converts:
            out.update(converter=self.converter, call=self.call)
            if self.error is not None:
                out["error"] = self.error
        return out

    @classmethod
    def from_json(cls, entry: dict) -> "Verdict":
        return cls(
            bool(entry["converts"]), str(entry["found_by"]), str(entry["converter"]), str(entry["call"]), entry.get("error")
        )
