"""A checkpoint the driver cannot trust: it refuses to start, or, when the operator asks (``--recover-checkpoint``),
adopts what the node proves to be in use. Pure but for reading file times.

Why refuse: the checkpoint is the driver's only record of which MIG devices, CDI specs and MPS daemons belong to
prepared claims. Starting without it means destroying every MIG device and deleting every CDI spec no claim records
— the devices of running pods. So a checkpoint that is corrupt, truncated, of an unknown version, or from another
boot while the node shows it was not rebooted, stops the driver with a message naming the file and the two ways on.

A missing checkpoint is weighed the same way: the node is fresh only when no CDI spec of this driver was written
during this boot and no MIG device exists at a placement this driver publishes. Either one means claims may be in
use (the file was deleted under them), so the driver refuses, or with the flag recovers, as from a foreign file.

A boot-ID change is a reboot only when everything agrees: the checkpoint and every CDI spec of this driver were
written before this boot began, and no MIG device the checkpoint records still exists (a reboot destroys MIG
devices). Anything else means the file is not the previous boot's, and trusting its "the node rebooted" would destroy
what pods use now.

Recovery adopts every claim whose CDI spec is in the CDI root: the checkpoint's own record when it can still be read
(another boot's), otherwise one rebuilt from the spec — its devices, its MIG devices found in NVML by the MIG UUID the
spec hands the container, its MPS daemon. Nothing is destroyed and nothing deleted at that start; MIG devices no
adopted claim holds are left in place and logged. A rebuilt record lacks what a spec does not say (namespace, name,
request names, share IDs, the time-slice level); the next prepare of the claim fills in the first four from the API,
and the time slice is not reset at its unprepare.
"""

from __future__ import annotations

import contextlib
import datetime
import logging
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from kubedra.driver import cdi
from kubedra.driver.checkpoint import PREPARE_COMPLETED, Checkpoint, ClaimRecord, DeviceRecord
from kubedra.driver.inventory import DriverError, MigDevice

log = logging.getLogger("kubedra.driver")
RUNBOOK = "docs/migrating-from-device-plugin.md, 'A checkpoint the driver cannot trust'"
FLAG = "--recover-checkpoint"


class CheckpointRefusedError(DriverError):
    """Starting would destroy MIG devices and CDI specs that the checkpoint can no longer vouch for."""


def _ways_on(path: Path, driver: str, cdi_root: Path, *, kept: bool = True) -> str:
    keeps = ", and keeps this file beside the new one" if kept else ""
    return (
        f"Nothing was changed. To go on, either restart the driver with {FLAG} (it adopts every claim whose CDI spec "
        f"is in {cdi_root}, with the MIG devices NVML shows for them, and destroys and deletes nothing{keeps}), or, "
        f"once no pod on this node uses a claim of {driver} (kubectl drain), remove {path} together with this "
        f"driver's CDI specs ({cdi_root}/{cdi.SPEC_PREFIX}*{cdi.SPEC_SUFFIX}) and the MIG devices it created: a "
        f"missing checkpoint beside either is refused too. See {RUNBOOK}."
    )


def corrupt_message(path: Path, reason: str, driver: str, cdi_root: Path) -> str:
    return (
        f"checkpoint {path} cannot be trusted ({reason}): without it the driver cannot tell which MIG devices and "
        f"CDI specs belong to running pods, and starting would destroy them. {_ways_on(path, driver, cdi_root)}"
    )


def foreign_message(path: Path, *, recorded: str, current: str, why: str, driver: str, cdi_root: Path) -> str:
    return (
        f"checkpoint {path} was written under boot ID {recorded!r} but this node's boot ID is {current!r}, and that "
        f"is not a reboot: {why}. Voiding its claims would destroy what running pods use. "
        f"{_ways_on(path, driver, cdi_root)}"
    )


def missing_message(path: Path, why: str, driver: str, cdi_root: Path) -> str:
    return (
        f"checkpoint {path} does not exist, but this is not a fresh node: {why}. Starting as on a fresh node would "
        f"destroy what running pods use. {_ways_on(path, driver, cdi_root, kept=False)}"
    )


def _iso(seconds: float) -> str:
    return datetime.datetime.fromtimestamp(seconds, tz=datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _mtime(path: Path) -> float | None:
    with contextlib.suppress(OSError):
        return path.stat().st_mtime
    return None


def reboot_contradicted(
    checkpoint_path: Path,
    loaded: Checkpoint,
    spec_files: Mapping[str, Path],
    booted: float | None,
    live_mig: Callable[[], set[str] | None],
) -> str | None:
    """Why the node cannot have rebooted since ``loaded`` was written, or None when all agrees with a reboot.
    ``live_mig``: the UUIDs of the MIG devices that exist now (None: they cannot be listed); asked last."""
    if booted is None:
        return "when this boot began cannot be read (btime of /proc/stat), so a reboot cannot be told apart"
    written = _mtime(checkpoint_path)
    if written is None or written >= booted:
        when = "at an unknown time" if written is None else f"at {_iso(written)}"
        return f"the file was written {when}, after this boot began at {_iso(booted)}"
    fresh = sorted(uid for uid, path in spec_files.items() if (_mtime(path) or booted) >= booted)
    if fresh:
        return f"the CDI specs of {len(fresh)} claim(s) were written during this boot ({', '.join(fresh[:3])})"
    recorded = {str(d.mig["uuid"]) for r in loaded.claims.values() for d in r.devices if d.mig and "uuid" in d.mig}
    if recorded:
        live = live_mig()
        if live is None:
            return "the MIG devices it records cannot be looked up in NVML"
        alive = sorted(recorded & live)
        if alive:
            return f"{len(alive)} MIG device(s) it records still exist ({', '.join(alive[:3])}); a reboot destroys them"
    return None


def fresh_node_contradicted(
    spec_files: Mapping[str, Path],
    booted: float | None,
    live_mig: Callable[[], Mapping[str, MigDevice] | None],
    placements: Iterable[tuple[str, int, int]],
) -> str | None:
    """Why a node without a checkpoint is not fresh, or None when nothing of this driver is in use on this boot.
    Evidence: a CDI spec of this driver written during this boot (all of them when the boot time cannot be read),
    or a live MIG device at a placement this driver publishes, as (parent UUID, GI profile ID, start)."""
    fresh = sorted(uid for uid, path in spec_files.items() if booted is None or (_mtime(path) or booted) >= booted)
    if fresh:
        when = "exist and when this boot began cannot be read" if booted is None else "were written during this boot"
        return f"the CDI specs of {len(fresh)} claim(s) {when} ({', '.join(fresh[:3])})"
    live = live_mig()
    if live is None:
        return "the MIG devices of this node cannot be listed through NVML"
    ours = set(placements)
    mine = sorted(uuid for uuid, m in live.items() if (m.parent_uuid, m.profile_id, m.start) in ours)
    if mine:
        return f"{len(mine)} MIG device(s) this driver creates exist ({', '.join(mine[:3])})"
    return None


def spec_files(cdi_root: Path) -> dict[str, Path]:
    """Claim UID → this driver's CDI spec file of that claim."""
    found = {}
    for path in sorted(cdi_root.glob(f"{cdi.SPEC_PREFIX}*{cdi.SPEC_SUFFIX}")):
        uid = cdi.claim_of_spec_file(path.name)
        if uid is not None:
            found[uid] = path
    return found


def _visible(edits: Mapping[str, Any]) -> list[str]:
    for entry in edits.get("env") or []:
        key, _, value = str(entry).partition("=")
        if key == "NVIDIA_VISIBLE_DEVICES":
            return [v for v in value.split(",") if v]
    return []


def record_from_spec(
    uid: str,
    document: Any,
    pool: str,
    mig_names: Iterable[str],
    live: Mapping[str, MigDevice],
) -> ClaimRecord:
    """A completed claim as its CDI spec shows it (see the module docstring for what a spec cannot say)."""
    if not isinstance(document, dict) or not isinstance(document.get("devices"), list):
        raise ValueError("not a CDI spec with devices")
    migs = set(mig_names)
    prefix = f"{uid}-"
    devices: list[DeviceRecord] = []
    mps_gpus: list[str] = []
    for entry in document["devices"]:
        name = str(entry.get("name", ""))
        if not name.startswith(prefix):
            raise ValueError(f"device {name!r} is not named <claim UID>-<device>")
        device = name[len(prefix) :]
        edits = entry.get("containerEdits") or {}
        visible = _visible(edits)
        mig = None
        if device in migs:
            found = next((live[u] for u in visible if u in live), None)
            if found is None:
                log.warning("recovery: claim %s: MIG device %s (%s) is not in NVML", uid, device, ",".join(visible))
            else:
                mig = found.to_json()
        elif any(str(e).startswith("CUDA_MPS_PIPE_DIRECTORY=") for e in edits.get("env") or []):
            mps_gpus += [u for u in visible if u not in mps_gpus]
        devices.append(DeviceRecord([], pool, device, [cdi.cdi_device_id(uid, device)], None, False, mig))
    record = ClaimRecord(PREPARE_COMPLETED, "", "", devices, {}, document)
    if mps_gpus:  # so unprepare stops the claim's control daemon
        record.mps = {"gpus": mps_gpus, "settings": []}
    return record


def adopt(
    loaded: Checkpoint | None,
    specs: Mapping[str, Path],
    *,
    read_spec: Callable[[Path], Any],
    pool: str,
    mig_names: Iterable[str],
    live: Mapping[str, MigDevice],
) -> dict[str, ClaimRecord]:
    """The claims recovery keeps: every one with a CDI spec, and those of a readable checkpoint whose MIG devices
    still exist; MIG devices none of them holds are logged, never destroyed here."""
    names = set(mig_names)
    claims: dict[str, ClaimRecord] = {}
    for uid, path in specs.items():
        record = loaded.claims.get(uid) if loaded is not None else None
        if record is None:
            try:
                record = record_from_spec(uid, read_spec(path), pool, names, live)
            except (OSError, ValueError) as exc:
                log.error("recovery: %s cannot be read (%s): left in place, its claim is not adopted", path, exc)
                continue
        claims[uid] = record
        log.warning("recovery: adopted claim %s (%d device(s)) from %s", uid, len(record.devices), path.name)
    for uid, record in (loaded.claims if loaded is not None else {}).items():
        uuids = {str(d.mig.get("uuid")) for d in record.devices if d.mig}
        if uid not in claims and uuids & set(live):
            claims[uid] = record
            log.warning("recovery: adopted claim %s: no CDI spec, but its MIG devices exist", uid)
        elif uid not in claims:
            log.warning("recovery: claim %s of the checkpoint has no CDI spec and no MIG device here: dropped", uid)
    held = {str(d.mig.get("uuid")) for r in claims.values() for d in r.devices if d.mig}
    for uuid, device in sorted(live.items()):
        if uuid not in held:
            log.warning(
                "recovery: MIG device %s (GI %d, CI %d of %s) is held by no adopted claim: left in place; the next "
                "start destroys it unless a claim records it",
                uuid,
                device.gi,
                device.ci,
                device.parent_uuid,
            )
    return claims
