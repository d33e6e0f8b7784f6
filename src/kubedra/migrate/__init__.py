"""Migration from NVIDIA's device plugin to DRA: workloads, the plugin's sharing config, and the report (pure)."""

from kubedra.migrate.documents import Source, dump
from kubedra.migrate.engine import migrate
from kubedra.migrate.model import Change, Decision, Migration, MigrationError, Mode, Options, OutputFile

__all__ = ["Change", "Decision", "Migration", "MigrationError", "Mode", "Options", "OutputFile", "Source", "dump",
           "migrate"]
