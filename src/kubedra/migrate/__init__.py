"""Migration from NVIDIA's device plugin to DRA: workloads, the plugin's sharing config, and the report (pure).

The names below are resolved on first use: the YAML round-trip machinery they need (ruamel) is a tenth of every
``kubedra`` command's start-up, and only ``migrate`` and ``validate`` read it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kubedra.migrate.documents import Source, dump
    from kubedra.migrate.engine import migrate
    from kubedra.migrate.model import Change, Decision, Migration, MigrationError, Mode, Options, OutputFile

_HOME = {
    "Source": "documents", "dump": "documents", "migrate": "engine",
    "Change": "model", "Decision": "model", "Migration": "model", "MigrationError": "model", "Mode": "model",
    "Options": "model", "OutputFile": "model",
}

__all__ = ["Change", "Decision", "Migration", "MigrationError", "Mode", "Options", "OutputFile", "Source", "dump",
           "migrate"]


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module 'kubedra.migrate' has no attribute {name!r}")
    return getattr(importlib.import_module(f"kubedra.migrate.{home}"), name)
