"""A conversion verdict: whether coremltools converts a node, how that was found, and the
converter's first error line when it does not. It is what the bridge document's ``conversion``
field carries (docs/bridge-json.md)."""

from __future__ import annotations

from typing import NamedTuple

from torch.fx import Node

PROBE = "probe"
VERIFICATION = "verification"

# Why a probe met an error (``Verdict.cause``).
# The op itself: it fails alone and beside its neighbours. The node is refused.
OP = "op"
# The probe's own inputs or outputs: it fails alone, and converts beside its neighbours. Trusted.
BOUNDARY = "boundary"
# Neither could be told apart (it fails beside its neighbours too, while coremltools reads the
# probe's inputs). Trusted, as stock trusts every node.
INCONCLUSIVE = "inconclusive"
CAUSES = (OP, BOUNDARY, INCONCLUSIVE)


class Verdict(NamedTuple):
    converts: bool
    # PROBE: the node converted alone; VERIFICATION: found by converting a planned partition.
    found_by: str
    # ``coremltools 9.0``: the converter that gave the verdict.
    converter: str
    # The op with the literal arguments that differ from its schema's defaults.
    call: str
    # The converter's first error line (exception type first); None when it converts cleanly.
    error: str | None = None
    # Why there was an error (OP, BOUNDARY, INCONCLUSIVE); None without one.
    cause: str | None = None
    # The probe fed the node values of the program's example sizes: it reads a value of a symbolic
    # size Core ML takes only inside a program, or a symbolic scalar.
    static_sizes: bool = False

    def to_json(self, *, whole: bool = False) -> dict:
        """As the bridge document carries it: a clean conversion says how it was found; an error,
        refused or not, also who met it with what and why (most nodes convert, and a large
        program's document would otherwise grow by a tenth). ``whole``: every member, as the cache
        keeps it."""
        out = {"converts": self.converts, "found_by": self.found_by}
        if whole or self.error is not None:
            out.update(converter=self.converter, call=self.call)
            if self.error is not None:
                out["error"] = self.error
            if self.cause is not None:
                out["cause"] = self.cause
        if self.static_sizes:
            out["static_sizes"] = True
        return out

    @classmethod
    def from_json(cls, entry: dict) -> "Verdict":
        cause = entry.get("cause")
        return cls(
            bool(entry["converts"]),
            str(entry["found_by"]),
            str(entry["converter"]),
            str(entry["call"]),
            entry.get("error"),
            cause if cause in CAUSES else None,
            bool(entry.get("static_sizes", False)),
        )


def readable_call(node: Node, name: str) -> str:
    """``aten.max_pool2d_with_indices.default(kernel_size=[3, 3], dilation=[2, 2])``: the op and its
    literal arguments that differ from the schema's defaults (tensor inputs left out)."""
    target = node.target
    schema = getattr(target if hasattr(target, "_schema") else getattr(target, "_op", target), "_schema", None)
    given = []
    if schema is None:
        given = [repr(a) for a in node.args if not _mentions_node(a)]
        given += [f"{k}={v!r}" for k, v in node.kwargs.items() if not _mentions_node(v)]
        return f"{name}({', '.join(given)})"
    for index, argument in enumerate(schema.arguments):
        if index < len(node.args) and not argument.kwarg_only:
            value = node.args[index]
        elif argument.name in node.kwargs:
            value = node.kwargs[argument.name]
        else:
            continue
        if _mentions_node(value) or _is_default(argument, value):
            continue
        given.append(f"{argument.name}={value!r}")
    return f"{name}({', '.join(given)})"


def _mentions_node(value) -> bool:
    if isinstance(value, Node):
        return True
    if isinstance(value, (list, tuple)):
        return any(_mentions_node(v) for v in value)
    if isinstance(value, dict):
        return any(_mentions_node(v) for v in value.values())
    return False


def _is_default(argument, value) -> bool:
    if not argument.has_default_value():
        return False
    default = argument.default_value
    if value == default:
        return True
    # An int list default written as one int (``padding=0`` for ``[0, 0]``).
    return isinstance(default, int) and isinstance(value, (list, tuple)) and all(v == default for v in value)
