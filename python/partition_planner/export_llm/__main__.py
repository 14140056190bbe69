"""``python -m partition_planner.export_llm``: see ``cli.py``."""

import sys

from .cli import main

sys.exit(main())
