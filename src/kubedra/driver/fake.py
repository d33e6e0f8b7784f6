"""The fake backend: the inventory comes from a YAML file (the shape ``kubedra driver --help`` shows)."""

from __future__ import annotations

from pathlib import Path

import yaml

from kubedra.driver.inventory import DriverError, Inventory, parse_inventory


class FakeBackend:
    def __init__(self, path: Path) -> None:
        self.path = path

    def discover(self) -> Inventory:
        try:
            data = yaml.safe_load(self.path.read_text())
        except OSError as exc:
            raise DriverError(f"{self.path}: cannot read the inventory: {exc.strerror or exc}") from exc
        except yaml.YAMLError as exc:
            raise DriverError(f"{self.path}: not YAML: {exc}") from exc
        return parse_inventory(data, str(self.path))
