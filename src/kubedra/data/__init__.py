"""Data shipped inside the package: the seed article's manifests (the default scenario and test fixtures)."""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path


def seed_dir() -> Path:
    """The directory holding the seed files (``01-resourceclass.yaml`` … ``06-metrics-and-alert.yaml``, README)."""
    return Path(str(files("kubedra.data").joinpath("seed")))
