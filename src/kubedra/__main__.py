"""``python -m kubedra``."""

from kubedra.cli import entrypoint

entrypoint()
