"""partition-planner's Python side: export an edge program to bridge JSON v1 (``export_graph``).

The native planner binding, plan application and the drop-in ``PlannedCoreMLPartitioner`` come with
the ExecuTorch bridge (see the issue tracker); ``export_graph`` needs only torch and executorch.
"""

from .export import BRIDGE_SCHEMA, export_graph

__all__ = ["BRIDGE_SCHEMA", "export_graph"]
