"""The export's configuration: an ``LlmConfig`` composed as export_llm composes it (its defaults, a
YAML file, the overrides), without the ``planner:`` section executorch does not know, and checked to
enable Core ML before anything runs."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from .options import ExportLlmError, PlannerOptions

def _coreml_target(config: Any) -> tuple[bool, str | None]:
    backend = getattr(getattr(config, "backend", None), "coreml", None)
    if backend is None:
        return False, None
    ios = getattr(backend, "ios", None)
    return bool(getattr(backend, "enabled", False)), None if ios is None else f"iOS{ios}"


def check_config(config: Any, planner: PlannerOptions) -> None:
    enabled, target = _coreml_target(config)
    if not enabled:
        raise ExportLlmError(
            "the config does not enable Core ML: partition_planner.export_llm plans the Core ML "
            "partitioner, so set backend.coreml.enabled=true (and backend.coreml.ios=18 for states)"
        )
    planner.validate(target)


def load_yaml(path: str) -> dict:
    import yaml

    try:
        with open(path) as f:
            loaded = yaml.safe_load(f)
    except OSError as e:
        raise ExportLlmError(f"--config {path}: {e.strerror}") from None
    except yaml.YAMLError as e:
        raise ExportLlmError(f"--config {path}: not YAML: {e}") from None
    if loaded is None:
        return {}
    if not isinstance(loaded, dict):
        raise ExportLlmError(f"--config {path}: expected a mapping at the top level")
    return loaded


def llm_config(given: Any) -> tuple[dict, Any]:
    """``(its planner section, an LlmConfig)`` from what the Python entry point was given: an
    ``LlmConfig``, a mapping or a YAML file's path, composed onto ``LlmConfig``'s defaults as
    export_llm composes its config."""
    from omegaconf import DictConfig, OmegaConf

    from executorch.extension.llm.export.config.llm_config import LlmConfig

    if isinstance(given, LlmConfig):
        return {}, given
    if isinstance(given, (str, os.PathLike)):
        given = load_yaml(os.fspath(given))
    if isinstance(given, DictConfig):
        given = OmegaConf.to_container(given)
    if not isinstance(given, Mapping):
        raise ExportLlmError(f"config must be an LlmConfig, a mapping or a YAML path, got {type(given).__name__}")
    return dict(given.get("planner") or {}), composed(without_planner(given))


def without_planner(config: Mapping) -> dict:
    """A config mapping as executorch's ``LlmConfig`` may see it: no ``planner`` section."""
    return {k: v for k, v in config.items() if k != "planner"}


def composed(*layers: Any) -> Any:
    """An ``LlmConfig``: its defaults, then each layer over them, as export_llm composes its config."""
    from omegaconf import OmegaConf

    from executorch.extension.llm.export.config.llm_config import LlmConfig

    return OmegaConf.to_object(OmegaConf.merge(OmegaConf.structured(LlmConfig), *layers))
