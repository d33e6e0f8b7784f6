"""The fake backend: the inventory comes from a YAML file (the shape ``kubedra driver --help`` shows).

MIG devices are "created" as NVML would: a GPU instance on a free placement (overlapping ones are refused with
NVML's "Insufficient Resources"), the lowest free GI and CI IDs, a ``MIG-`` UUID; every create and destroy is
recorded in ``calls``. XID events are what ``emit_xid`` puts in (tests), delivered as NVML's event set delivers
them. With ``state`` (a JSON file in the plugin dir) they outlive the process, as real MIG
devices outlive a driver restart, so crash recovery can be exercised.
"""

from __future__ import annotations

import json
import queue
import threading
import uuid as uuidlib
from collections.abc import Callable
from pathlib import Path

import yaml

from kubedra.driver import files
from kubedra.driver.inventory import DriverError, Inventory, MigDevice, XidEvent, parse_inventory


class FakeBackend:
    def __init__(self, path: Path, state: Path | None = None) -> None:
        self.path = path
        self.state = state
        self.calls: list[tuple[str, str, int, int]] = []  # ("create" | "destroy", parent UUID, profile ID, start)
        self._lock = threading.Lock()
        self._devices: list[MigDevice] = []
        self._xids: queue.Queue[XidEvent] = queue.Queue()
        self._load()

    def _load(self) -> None:
        """The devices as the state file has them: another driver process (a rolling update) may have changed
        them; the driver's file lock serializes the calls."""
        if self.state is not None and self.state.exists():
            self._devices = [MigDevice.from_json(d) for d in json.loads(self.state.read_text())]

    def discover(self) -> Inventory:
        try:
            data = yaml.safe_load(self.path.read_text(encoding="utf-8"))
        except OSError as exc:
            raise DriverError(f"{self.path}: cannot read the inventory: {exc.strerror or exc}") from exc
        except UnicodeDecodeError as exc:
            raise DriverError(f"{self.path}: not UTF-8 text: {exc.reason} at byte {exc.start}") from exc
        except yaml.YAMLError as exc:
            raise DriverError(f"{self.path}: not YAML: {exc}") from exc
        return parse_inventory(data, str(self.path))

    def _persist(self) -> None:
        if self.state is not None:
            files.atomic_write(self.state, json.dumps([d.to_json() for d in self._devices]).encode(), durable=False)

    def create_mig(self, parent_uuid: str, profile_id: int, start: int, size: int) -> MigDevice:
        with self._lock:
            self._load()
            mine = [d for d in self._devices if d.parent_uuid == parent_uuid]
            if any(d.start < start + size and start < d.start + d.size for d in mine):
                raise DriverError(
                    f"NVML: nvmlDeviceCreateGpuInstanceWithPlacement({parent_uuid}, profile {profile_id}, "
                    f"start {start}): Insufficient Resources"
                )
            gi = min(set(range(1, len(mine) + 2)) - {d.gi for d in mine})
            tail = parent_uuid[-3:]
            minor = int(tail) if tail.isascii() and tail.isdigit() else 0
            device = MigDevice(
                parent_uuid,
                profile_id,
                start,
                size,
                gi,
                0,
                f"MIG-{uuidlib.uuid5(uuidlib.NAMESPACE_OID, f'{parent_uuid}/{gi}/0')}",
                gi_cap=3 + minor * 128 + gi * 9,  # as nvidia-caps numbers them: a GI's cap, its CIs' after it
                ci_cap=4 + minor * 128 + gi * 9,
            )
            self._devices.append(device)
            self.calls.append(("create", parent_uuid, profile_id, start))
            self._persist()
            return device

    def destroy_mig(self, device: MigDevice) -> None:
        with self._lock:
            self._load()
            kept = [
                d for d in self._devices if (d.parent_uuid, d.gi, d.ci) != (device.parent_uuid, device.gi, device.ci)
            ]
            if len(kept) != len(self._devices):
                self.calls.append(("destroy", device.parent_uuid, device.profile_id, device.start))
            self._devices = kept
            self._persist()

    def mig_devices(self, parent_uuid: str) -> list[MigDevice]:
        with self._lock:
            self._load()
            return [d for d in self._devices if d.parent_uuid == parent_uuid]

    def emit_xid(self, event: XidEvent) -> None:
        self._xids.put(event)

    def watch_xids(self, on_event: Callable[[XidEvent], None], stop: threading.Event) -> None:
        while not stop.is_set():
            try:
                event = self._xids.get(timeout=0.1)
            except queue.Empty:
                continue
            on_event(event)
