"""The driver proper: prepare and unprepare claims on this node, crash-safe through the checkpoint.

Prepare of one claim: already ``PrepareCompleted`` → the recorded devices (idempotent); ``PrepareStarted`` (a
previous attempt died) → roll back first; refuse devices another claim holds unless shared (consumable shares or
admin access); write ``PrepareStarted`` with what will be done; apply sharing (nvidia-smi through the runner);
create MIG devices (NVIDIA's DynamicMIG: the published placement devices become a GPU instance and a compute
instance through the backend); write the CDI spec; write ``PrepareCompleted``. At start, MIG devices no claim
records are destroyed (the checkpoint is the truth, as NVIDIA's ``DestroyUnknownMIGDevices`` has it), which is why a
checkpoint that cannot be trusted, or is missing while CDI specs of this boot or MIG devices of this driver show
claims in use, stops the driver before anything is touched (:mod:`.recovery`).
Unprepare releases exactly what the checkpoint says was prepared.
Calls are serialized by a thread lock and a file lock (``pu.lock``, as NVIDIA's driver names it); claims are read
from the API before taking them, as the kubelet-plugin helper does.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import yaml

from kubedra.driver import cdi, checkpoint, files, recovery, sharing
from kubedra.driver.checkpoint import PREPARE_COMPLETED, PREPARE_STARTED, Checkpoint, ClaimRecord, DeviceRecord
from kubedra.driver.claims import ClaimPlan, ClaimRefusedError, plan_claim
from kubedra.driver.devices import MigPlacement, mig_placements
from kubedra.driver.inventory import NO_INSTANCE, XID_TAINT_KEY, GpuInfo, Inventory, MigBackend, MigDevice, XidEvent
from kubedra.driver.types import ClaimRef, DeviceHealth, HealthReport, PreparedDevice, PrepareResult
from kubedra.objects.gpuconfig import GpuConfigError, GpuSharing, parse_gpu_config
from kubedra.objects.model import DeviceTaint

log = logging.getLogger("kubedra.driver")
CHECKPOINT_FILE = "checkpoint.json"
LOCK_FILE = "pu.lock"


class ClaimSource(Protocol):
    """Reads a ResourceClaim (API JSON) by namespace and name; raises for a missing or unreadable claim."""

    def get_claim(self, namespace: str, name: str) -> dict[str, Any]: ...


@dataclass(frozen=True)
class NodeConfig:
    node: str
    driver: str
    plugin_dir: Path
    cdi_root: Path
    boot_id_path: Path = files.BOOT_ID_PATH
    proc_stat_path: Path = files.PROC_STAT_PATH  # btime: when this boot began (a boot-ID change is checked with it)
    recover_checkpoint: bool = False  # --recover-checkpoint: adopt what the node proves instead of refusing

    @property
    def checkpoint_path(self) -> Path:
        return self.plugin_dir / CHECKPOINT_FILE


@dataclass
class StartupReport:
    """What recovery found at start (logged; tests read it)."""

    corrupt: str | None = None  # why the checkpoint could not be read
    fresh: bool = False  # no checkpoint and nothing of this driver in use on this boot
    missing: str | None = None  # no checkpoint, but why this is not a fresh node (refused, or recovered)
    rebooted: bool = False
    recovered: list[str] | None = None  # --recover-checkpoint, untrusted or missing checkpoint: claims adopted
    set_aside: str | None = None  # where the untrusted checkpoint was kept
    rolled_back: list[str] = field(default_factory=list)
    stale_specs: list[str] = field(default_factory=list)
    regenerated_specs: list[str] = field(default_factory=list)
    destroyed_mig: list[str] = field(default_factory=list)  # "<parent UUID>/gi<N>/ci<M>" no claim records


class NodeDriver:
    def __init__(
        self,
        config: NodeConfig,
        inventory: Inventory,
        claims: ClaimSource,
        runner: sharing.CommandRunner,
        *,
        clock: Callable[[], float] = time.time,
        mig: MigBackend | None = None,
    ) -> None:
        self.config = config
        self.inventory = inventory
        self.gpus = inventory.by_device_name()
        self.migs = mig_placements(inventory)
        self.mig = mig
        self.claims = claims
        self.runner = runner
        self.clock = clock
        self._lock = threading.Lock()
        self._health_changed = threading.Condition()
        self._health_version = 0
        self._taints: dict[str, DeviceTaint] = {}  # device → the XID taint it carries (NVIDIA's gpu.nvidia.com/xid)
        self._health: dict[str, tuple[bool | None, str, int]] = {
            g.device_name: (g.healthy, "", int(clock())) for g in inventory.gpus
        }
        config.plugin_dir.mkdir(parents=True, exist_ok=True)
        config.cdi_root.mkdir(parents=True, exist_ok=True)
        self.state = Checkpoint(files.boot_id(config.boot_id_path))
        self._stamp: tuple[int, int, int] | None = None  # the checkpoint file as this process last saw it
        with self._serialized(reload=False):  # another driver pod (rolling update) may be mid-prepare
            self.startup = self._recover()

    # ------------------------------------------------------------------------------------------ kubelet calls

    def prepare(self, claims: Sequence[ClaimRef]) -> dict[str, PrepareResult]:
        results: dict[str, PrepareResult] = {}
        plans: list[ClaimPlan] = []
        for ref in claims:  # the slow API reads happen before serializing, as upstream's helper does them
            problem = ref.uid_problem()
            if problem is not None:
                results[ref.uid] = PrepareResult(error=problem)
                continue
            try:
                document = self.claims.get_claim(ref.namespace, ref.name)
                plans.append(plan_claim(document, ref, self.config.driver, self.config.node))
            except ClaimRefusedError as exc:
                results[ref.uid] = PrepareResult(error=str(exc))
            except Exception as exc:  # noqa: BLE001 - any failure to read one claim is that claim's error
                results[ref.uid] = PrepareResult(error=f"retrieve claim {ref.namespace}/{ref.name}: {exc}")
        if plans:
            with self._serialized():
                for plan in plans:
                    results[plan.ref.uid] = self._prepare_one(plan)
        return {ref.uid: results[ref.uid] for ref in claims}

    def unprepare(self, claims: Sequence[ClaimRef]) -> dict[str, str]:
        results: dict[str, str] = {}
        if not claims:
            return results
        with self._serialized():
            for ref in claims:
                problem = ref.uid_problem()
                if problem is not None:
                    results[ref.uid] = problem
                    continue
                try:
                    self._unprepare_one(ref.uid)
                    results[ref.uid] = ""
                except Exception as exc:
                    log.exception("unprepare %s", ref)
                    results[ref.uid] = f"unprepare claim {ref.namespace}/{ref.name}: {exc}"
        return results

    def watch_health(self, active: Callable[[], bool]) -> Iterator[HealthReport]:
        """The full device list now, then again after every change, while the stream is ``active``."""
        seen = -1
        while active():
            with self._health_changed:
                if self._health_version == seen:
                    self._health_changed.wait(timeout=0.5)
                    continue
                seen = self._health_version
                report = HealthReport(
                    [DeviceHealth(self.config.node, d, h, t, m) for d, (h, m, t) in sorted(self._health.items())]
                )
            yield report

    def set_health(self, device: str, healthy: bool | None, message: str = "") -> None:
        with self._health_changed:
            self._health[device] = (healthy, message, int(self.clock()))
            self._health_version += 1
            self._health_changed.notify_all()

    def record_xid(self, event: XidEvent) -> str | None:
        """An XID on a GPU (or a prepared MIG device): a critical one makes the device Unhealthy in the health
        stream; every one sets the device's ``gpu.nvidia.com/xid=<xid>`` taint — NoSchedule, or None for the XIDs
        NVIDIA ignores (a later ignored XID never softens a critical one). The device's name, None if unknown."""
        device = self._device_of(event)
        if device is None:
            log.warning("XID %d on %s: not a GPU of this node", event.xid, event.uuid)
            return None
        log.warning("XID %d on %s (%s)%s", event.xid, device, event.uuid, "" if event.critical else ", ignored")
        with self._health_changed:
            current = self._taints.get(device)
            if event.critical or current is None or current.effect != "NoSchedule":
                effect = "NoSchedule" if event.critical else "None"
                self._taints[device] = DeviceTaint(key=XID_TAINT_KEY, value=str(event.xid), effect=effect)
        if event.critical:
            self.set_health(device, False, f"XID {event.xid}")
        return device

    def device_taints(self) -> dict[str, list[DeviceTaint]]:
        with self._health_changed:
            return {device: [taint] for device, taint in self._taints.items()}

    def _device_of(self, event: XidEvent) -> str | None:
        gpu = next((g for g in self.inventory.gpus if g.uuid == event.uuid), None)
        if gpu is None:
            return None
        if event.gi != NO_INSTANCE:  # a MIG device's event: the prepared MIG device it belongs to
            for record in list(self.state.claims.values()):
                for d in record.devices:
                    if d.mig and (d.mig.get("parentUUID"), d.mig.get("gi"), d.mig.get("ci")) == (
                        event.uuid,
                        event.gi,
                        event.ci,
                    ):
                        return d.device
        return gpu.device_name

    def update_inventory(self, inventory: Inventory) -> None:
        """A fresh discovery: new GPUs can be prepared, and health changes reach the health stream."""
        with self._lock:
            self.inventory = inventory
            self.gpus = inventory.by_device_name()
            self.migs = mig_placements(inventory)
        now = int(self.clock())
        with self._health_changed:  # one change, one report
            changed = False
            for gpu in inventory.gpus:
                if self._health.get(gpu.device_name, (None,))[0] != gpu.healthy:
                    self._health[gpu.device_name] = (gpu.healthy, "" if gpu.healthy else "reported unhealthy", now)
                    changed = True
            if changed:
                self._health_version += 1
                self._health_changed.notify_all()

    def prepared_devices(self) -> dict[str, list[str]]:
        """Claim UID → device names, completed claims only (tests and the benchmark read it)."""
        return {
            uid: [d.device for d in rec.devices]
            for uid, rec in self.state.claims.items()
            if rec.state == PREPARE_COMPLETED
        }

    # ------------------------------------------------------------------------------------------ internals

    @contextlib.contextmanager
    def _serialized(self, *, reload: bool = True) -> Iterator[None]:
        """One call at a time on this node, across processes: during a rolling update two driver pods share the
        plugin dir, and the kubelet may prepare through one and unprepare through the other. Under the lock the
        checkpoint is read again when the other process has written it since (the helper's "load shared state at
        the start of a call")."""
        with self._lock, files.file_lock(self.config.plugin_dir / LOCK_FILE):
            if reload:
                self._reload()
            yield

    def _file_stamp(self) -> tuple[int, int, int] | None:
        try:
            st = self.config.checkpoint_path.stat()
        except FileNotFoundError:
            return None
        return st.st_ino, st.st_mtime_ns, st.st_size

    def _reload(self) -> None:
        stamp = self._file_stamp()
        if stamp == self._stamp or stamp is None:
            return
        try:
            loaded = checkpoint.decode(self.config.checkpoint_path.read_bytes())
        except (OSError, checkpoint.CorruptCheckpointError) as exc:
            log.error(
                "checkpoint %s written by another driver cannot be read, keeping this one's: %s",
                self.config.checkpoint_path,
                exc,
            )
            return
        if loaded.boot_id == self.state.boot_id:
            self.state.claims = loaded.claims
        self._stamp = stamp

    def _save(self, *, durable: bool = True) -> None:
        """``durable=False`` for PrepareStarted: renamed into place, not fsynced. A SIGKILL cannot lose it (the
        kernel has it; the next reader sees it), and what a power loss could lose does not matter: the node then
        reboots, the boot ID voids every claim and the GPUs come back reset. So PrepareCompleted is a prepare's one
        durable write, its commit point, and the CDI spec (also not fsynced) is written again from it at start."""
        files.atomic_write(self.config.checkpoint_path, checkpoint.encode(self.state), 0o600, durable=durable)
        self._stamp = self._file_stamp()

    def _spec_path(self, uid: str) -> Path:
        return self.config.cdi_root / cdi.spec_file_name(uid)

    def _prepare_one(self, plan: ClaimPlan) -> PrepareResult:
        uid = plan.ref.uid
        record = self.state.claims.get(uid)
        if record is not None and record.state == PREPARE_COMPLETED:
            if not record.namespace:
                self._complete_recovered(plan, record)
            return _result(record)
        if record is not None:
            self._rollback(uid, record)
        try:
            record, spec = self._plan_record(plan)
        except ClaimRefusedError as exc:
            return PrepareResult(error=str(exc))
        self.state.claims[uid] = record
        self._save(durable=False)
        try:
            for uuid, level in record.time_slice.items():
                for argv in sharing.set_time_slice(uuid, level):
                    self.runner.run(argv)
            for uuid in _mps_gpus(spec):
                for argv in sharing.set_exclusive_process(uuid):
                    self.runner.run(argv)
            if record.mps is not None:
                sharing.start_mps(self.runner, self.config.plugin_dir, uid, record.mps["gpus"], record.mps["settings"])
            self._create_mig(record, spec)
            files.atomic_write(self._spec_path(uid), _dump(record.cdi_spec or cdi.spec_document(spec)), durable=False)
        except Exception as exc:
            log.exception("prepare %s", plan.ref)
            self._rollback(uid, record)
            return PrepareResult(error=f"prepare claim {plan.ref.namespace}/{plan.ref.name}: {exc}")
        record.state = PREPARE_COMPLETED
        self._save()
        return _result(record)

    def _complete_recovered(self, plan: ClaimPlan, record: ClaimRecord) -> None:
        """A claim adopted by --recover-checkpoint from its CDI spec: what the spec could not say comes from the
        claim the kubelet prepares again (namespace, name, request names, share IDs)."""
        record.namespace, record.name = plan.ref.namespace, plan.ref.name
        allocated = {d.device: d for d in plan.devices}
        for d in record.devices:
            if d.device in allocated and not d.request_names:
                d.request_names = [allocated[d.device].base_request]
                d.share_id = allocated[d.device].share_id
                d.admin_access = allocated[d.device].admin_access
        self._save()

    def _plan_record(self, plan: ClaimPlan) -> tuple[ClaimRecord, cdi.ClaimSpec]:
        uid = plan.ref.uid
        held = self._held_devices(exclude=uid)
        records: list[DeviceRecord] = []
        time_slice: dict[str, int] = {}
        by_request: dict[str, list[str]] = {}
        gpus: dict[str, tuple[GpuInfo, GpuSharing]] = {}
        for device in plan.devices:
            gpu = self.gpus.get(device.device)
            placement = self.migs.get(device.device) if gpu is None else None
            if gpu is None and placement is None:
                raise ClaimRefusedError(f"claim {plan.ref.namespace}/{plan.ref.name}: device {device.device}: unknown")
            shared = device.share_id is not None or device.admin_access
            holder = held.get(device.device)
            if holder is not None and not (shared and holder[1]):
                raise ClaimRefusedError(
                    f"claim {plan.ref.namespace}/{plan.ref.name}: device {device.device} is already prepared "
                    f"for claim {holder[0]}"
                )
            if placement is not None:
                records.append(self._mig_record(plan, device, placement, uid))
                continue
            assert gpu is not None
            gpu_sharing = self._sharing(plan, device)
            if gpu_sharing.strategy == "MPS" and device.share_id is not None:
                raise ClaimRefusedError(
                    f"claim {plan.ref.namespace}/{plan.ref.name}: device {device.device}: MPS cannot be combined "
                    "with consumable shares"
                )
            if gpu_sharing.strategy == "TimeSlicing":
                other = self._time_slice_of(gpu.uuid, exclude=uid)
                if other is not None and other != gpu_sharing.time_slice_level:
                    raise ClaimRefusedError(
                        f"claim {plan.ref.namespace}/{plan.ref.name}: device {device.device}: another claim set "
                        f"time-slice level {other} on GPU {gpu.uuid}"
                    )
                time_slice[gpu.uuid] = gpu_sharing.time_slice_level
            records.append(
                DeviceRecord(
                    [device.base_request],
                    device.pool,
                    device.device,
                    [cdi.cdi_device_id(uid, device.device)],
                    device.share_id,
                    device.admin_access,
                )
            )
            by_request.setdefault(device.base_request, []).append(gpu.uuid)
            gpus.setdefault(device.device, (gpu, gpu_sharing))
        spec = cdi.ClaimSpec(uid)
        mps: list[tuple[int, str, GpuSharing]] = []
        for index, (name, (gpu, gpu_sharing)) in enumerate(gpus.items()):
            if gpu_sharing.strategy == "MPS":
                mps.append((index, gpu.uuid, gpu_sharing))
            requests = [r.request_names[0] for r in records if r.device == name]
            visible = tuple(dict.fromkeys(u for r in requests for u in by_request[r]))
            env: tuple[str, ...] = ()
            mounts: tuple[tuple[str, str, tuple[str, ...]], ...] = ()
            if gpu_sharing.strategy == "MPS":
                env, mounts = sharing.mps_edits(gpu_sharing, self.config.plugin_dir, uid, index, gpu.uuid)
            spec.devices.append(cdi.CdiDevice(name, gpu.minor, visible, env, mounts, gpu.uuid))
        record = ClaimRecord(
            PREPARE_STARTED, plan.ref.namespace, plan.ref.name, records, time_slice, cdi.spec_document(spec)
        )
        if mps:  # one control daemon for the claim's MPS GPUs, with the claim's limits
            settings = sharing.mps_settings(mps[0][2], [(i, u) for i, u, _ in mps])
            record.mps = {"gpus": [u for _, u, _ in mps], "settings": settings}
        return record, spec

    def _mig_record(self, plan: ClaimPlan, device: Any, placement: MigPlacement, uid: str) -> DeviceRecord:
        """A MIG device to create at prepare (NVIDIA's DynamicMIG): refused without a MIG-capable backend, and
        with a GpuConfig (NVIDIA's driver refuses a config of the wrong device type)."""
        where = f"claim {plan.ref.namespace}/{plan.ref.name}: device {device.device}"
        if self.mig is None:
            raise ClaimRefusedError(f"{where}: this backend cannot create MIG devices")
        if plan.configs_for(device):
            raise ClaimRefusedError(f"{where}: a GpuConfig cannot be applied to a MIG device")
        if device.share_id is not None:
            raise ClaimRefusedError(f"{where}: a MIG device cannot be shared with consumable shares")
        intent = {
            "parentUUID": placement.gpu.uuid,
            "profileID": placement.profile.profile_id,
            "start": placement.start,
            "size": placement.size,
        }
        return DeviceRecord(
            [device.base_request],
            device.pool,
            device.device,
            [cdi.cdi_device_id(uid, device.device)],
            None,
            device.admin_access,
            intent,
        )

    def _create_mig(self, record: ClaimRecord, spec: cdi.ClaimSpec) -> None:
        """Create the record's MIG devices (the checkpoint already says they may exist) and add their CDI devices."""
        wanted = [d for d in record.devices if d.mig is not None]
        if not wanted:
            return
        assert self.mig is not None
        for d in wanted:
            assert d.mig is not None
            created = self.mig.create_mig(d.mig["parentUUID"], d.mig["profileID"], d.mig["start"], d.mig["size"])
            d.mig = created.to_json()
            parent = next(g for g in self.inventory.gpus if g.uuid == created.parent_uuid)
            caps = (f"/dev/nvidia-caps/nvidia-cap{created.gi_cap}", f"/dev/nvidia-caps/nvidia-cap{created.ci_cap}")
            spec.devices.append(cdi.CdiDevice(d.device, parent.minor, (created.uuid,), uuid=created.uuid, nodes=caps))
        record.cdi_spec = cdi.spec_document(spec)

    def _destroy_mig(self, record: ClaimRecord) -> None:
        if self.mig is None:
            return
        for d in record.devices:
            if d.mig is None:
                continue
            if "gi" in d.mig:
                targets = [MigDevice.from_json(d.mig)]
            else:  # a prepare died between asking NVML and recording the result: found by its placement
                targets = [
                    m
                    for m in self.mig.mig_devices(d.mig["parentUUID"])
                    if (m.profile_id, m.start) == (d.mig["profileID"], d.mig["start"])
                ]
            for target in targets:
                self.mig.destroy_mig(target)

    def _destroy_unknown_mig(self, report: StartupReport) -> None:
        """NVIDIA's DestroyUnknownMIGDevices: the checkpoint is the truth; MIG devices no claim records go."""
        if self.mig is None:
            return
        recorded = {
            (d.mig["parentUUID"], d.mig.get("gi"), d.mig.get("ci"))
            for rec in self.state.claims.values()
            for d in rec.devices
            if d.mig is not None
        }
        for gpu in self.inventory.gpus:
            if not gpu.mig_profiles:
                continue
            for m in self.mig.mig_devices(gpu.uuid):
                if (m.parent_uuid, m.gi, m.ci) not in recorded:
                    log.warning(
                        "destroying MIG device %s (GI %d, CI %d) of %s: no claim records it",
                        m.uuid,
                        m.gi,
                        m.ci,
                        gpu.uuid,
                    )
                    self.mig.destroy_mig(m)
                    report.destroyed_mig.append(f"{m.parent_uuid}/gi{m.gi}/ci{m.ci}")

    def _sharing(self, plan: ClaimPlan, device: Any) -> GpuSharing:
        configs = plan.configs_for(device)
        if not configs:
            return GpuSharing()
        try:
            return parse_gpu_config(configs[-1].parameters)
        except GpuConfigError as exc:
            raise ClaimRefusedError(f"claim {plan.ref.namespace}/{plan.ref.name}: GpuConfig: {exc}") from exc

    def _held_devices(self, exclude: str) -> dict[str, tuple[str, bool]]:
        """Device → (claim holding it, whether that claim shares it)."""
        held: dict[str, tuple[str, bool]] = {}
        for uid, rec in self.state.claims.items():
            if uid == exclude:
                continue
            for d in rec.devices:
                shared = d.share_id is not None or d.admin_access
                previous = held.get(d.device)
                who = f"{rec.namespace}/{rec.name}" if rec.namespace else f"with UID {uid} (recovered)"
                held[d.device] = (who, shared and (previous is None or previous[1]))
        return held

    def _time_slice_of(self, uuid: str, exclude: str) -> int | None:
        for uid, rec in self.state.claims.items():
            if uid != exclude and uuid in rec.time_slice:
                return rec.time_slice[uuid]
        return None

    def _release(self, uid: str, record: ClaimRecord) -> None:
        """Undo what ``record`` says was (or may have been) done: CDI spec, then time slices nobody else uses."""
        files.remove(self._spec_path(uid))
        self._destroy_mig(record)
        if record.mps is not None:
            sharing.stop_mps(self.runner, self.config.plugin_dir, uid, record.mps["gpus"])
        for uuid in record.time_slice:
            if self._time_slice_of(uuid, exclude=uid) is None:
                for argv in sharing.reset_time_slice(uuid):
                    try:
                        self.runner.run(argv)
                    except Exception:
                        log.exception("resetting the time slice of %s", uuid)

    def _rollback(self, uid: str, record: ClaimRecord) -> None:
        log.warning("rolling back the unfinished prepare of claim %s/%s (%s)", record.namespace, record.name, uid)
        self._release(uid, record)
        del self.state.claims[uid]
        self._save()

    def _unprepare_one(self, uid: str) -> None:
        record = self.state.claims.get(uid)
        if record is None:
            files.remove(self._spec_path(uid))  # nothing recorded: still no spec may stay behind
            return
        self._release(uid, record)
        del self.state.claims[uid]
        self._save()

    def _recover(self) -> StartupReport:
        """The checkpoint is checked before anything on the node is touched: one that cannot be trusted stops the
        driver here (CheckpointRefusedError), unless the operator asked for recovery (:mod:`.recovery`)."""
        report = StartupReport()
        trusted = self._trusted_checkpoint(report)
        files.remove_temp_files(self.config.plugin_dir)
        files.remove_temp_files(self.config.cdi_root)
        if report.recovered is not None:
            self._regenerate_missing_specs(report)
            self._save()
            return report
        if trusted is not None:
            self.state.claims = trusted.claims
        for uid, record in list(self.state.claims.items()):
            if record.state == PREPARE_STARTED:
                self._rollback(uid, record)
                report.rolled_back.append(uid)
        self._destroy_unknown_mig(report)
        for owner, spec_file in recovery.spec_files(self.config.cdi_root).items():
            if owner not in self.state.claims:
                files.remove(spec_file)
                report.stale_specs.append(owner)
        self._regenerate_missing_specs(report)
        self._save()
        return report

    def _regenerate_missing_specs(self, report: StartupReport) -> None:
        """Every claim kept has its CDI spec: one lost (deleted by hand, a crash before it was renamed) is written
        again from the record."""
        for uid, record in self.state.claims.items():
            if not self._spec_path(uid).exists():
                report.regenerated_specs.append(uid)
                self._regenerate_spec(uid, record)

    def _trusted_checkpoint(self, report: StartupReport) -> Checkpoint | None:
        """The checkpoint whose claims this start keeps (None: none, a fresh node or a reboot). Untrusted, or
        missing while the node shows claims in use: refused, or with ``recover_checkpoint`` the claims the node
        proves are adopted into ``self.state`` and an untrusted file is kept beside the new one."""
        judged = self._judge_checkpoint(report)
        if not isinstance(judged, _Untrusted):
            return judged
        if not self.config.recover_checkpoint:
            log.error("%s", judged.message)
            raise recovery.CheckpointRefusedError(judged.message)
        self._adopt(judged, report)
        return None

    def _judge_checkpoint(self, report: StartupReport) -> Checkpoint | _Untrusted | None:
        """The checkpoint to keep, None where no claim survives (a fresh node, a reboot), or why not to start."""
        path, config = self.config.checkpoint_path, self.config
        if not path.exists():
            report.missing = self._not_fresh()
            if report.missing is None:
                report.fresh = True
                log.warning(
                    "no checkpoint %s, no CDI spec of this boot, no MIG device of %s: a fresh node", path, config.driver
                )
                if config.recover_checkpoint:
                    log.warning("%s: no checkpoint, nothing to recover", recovery.FLAG)
                return None
            return _Untrusted(None, recovery.missing_message(path, report.missing, config.driver, config.cdi_root))
        try:
            loaded = checkpoint.decode(path.read_bytes())
        except (OSError, checkpoint.CorruptCheckpointError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            report.corrupt = reason
            return _Untrusted(None, recovery.corrupt_message(path, reason, config.driver, config.cdi_root), "corrupt")
        if not loaded.boot_id or loaded.boot_id == self.state.boot_id:
            if config.recover_checkpoint:
                log.warning("%s: the checkpoint is sound, nothing to recover", recovery.FLAG)
            return loaded
        specs = recovery.spec_files(config.cdi_root)
        booted = files.boot_time(config.proc_stat_path)
        why = recovery.reboot_contradicted(path, loaded, specs, booted, self._live_mig)
        if why is None:
            report.rebooted = True
            log.warning("the node rebooted since the checkpoint was written: prepared claims are void")
            return None
        message = recovery.foreign_message(
            path,
            recorded=loaded.boot_id,
            current=self.state.boot_id,
            why=why,
            driver=config.driver,
            cdi_root=config.cdi_root,
        )
        return _Untrusted(loaded, message, "foreign-boot")

    def _adopt(self, untrusted: _Untrusted, report: StartupReport) -> None:
        """--recover-checkpoint: adopt what the CDI specs and NVML prove; an untrusted file is set aside."""
        path = self.config.checkpoint_path
        log.warning("%s: recovering: %s", recovery.FLAG, untrusted.message)
        live = self._live_mig_devices()
        if live is None:
            raise recovery.CheckpointRefusedError(
                f"{recovery.FLAG}: the MIG devices of this node cannot be listed through NVML, so recovery cannot tell "
                f"which are in use; nothing was changed. {untrusted.message}"
            )
        self.state.claims = recovery.adopt(
            untrusted.loaded,
            recovery.spec_files(self.config.cdi_root),
            read_spec=_read_spec,
            pool=self.config.node,
            mig_names=self.migs,
            live=live,
        )
        report.recovered = sorted(self.state.claims)
        if untrusted.kind is None:  # no file: nothing to keep
            log.warning("%s: %d claim(s) adopted into a new checkpoint", recovery.FLAG, len(self.state.claims))
            return
        aside = path.with_name(f"{path.name}.{untrusted.kind}-{int(self.clock())}")
        path.replace(aside)  # kept for whoever investigates; the new checkpoint is written next
        report.set_aside = aside.name
        log.warning(
            "%s: %d claim(s) adopted; the old checkpoint is kept as %s", recovery.FLAG, len(self.state.claims), aside
        )

    def _not_fresh(self) -> str | None:
        """Without a checkpoint: why the node still has claims of this driver in use (None: a fresh node). A lost
        file is weighed like a foreign one, since starting as fresh destroys every MIG device and spec."""
        return recovery.fresh_node_contradicted(
            recovery.spec_files(self.config.cdi_root),
            files.boot_time(self.config.proc_stat_path),
            self._live_mig_devices,
            [(m.gpu.uuid, m.profile.profile_id, m.start) for m in self.migs.values()],
        )

    def _live_mig_devices(self) -> dict[str, MigDevice] | None:
        """Every MIG device on the GPUs that publish MIG profiles, by MIG UUID; None if NVML cannot say."""
        if self.mig is None:
            return {}
        try:
            return {m.uuid: m for g in self.inventory.gpus if g.mig_profiles for m in self.mig.mig_devices(g.uuid)}
        except Exception:  # any failure to list means "cannot prove", which refuses
            log.exception("listing MIG devices")
            return None

    def _live_mig(self) -> set[str] | None:
        live = self._live_mig_devices()
        return None if live is None else set(live)

    def _regenerate_spec(self, uid: str, record: ClaimRecord) -> None:
        """A prepared claim whose spec is gone (``/var/run/cdi`` is often a tmpfs): written again, as it was."""
        if record.cdi_spec is not None:
            files.atomic_write(self._spec_path(uid), _dump(record.cdi_spec), durable=False)


@dataclass(frozen=True)
class _Untrusted:
    """A checkpoint not to start from: the file's claims where it could be read, the refusal, and the name its
    file is set aside under by recovery (None: there is no file)."""

    loaded: Checkpoint | None
    message: str
    kind: str | None = None


def _read_spec(path: Path) -> Any:
    try:
        return yaml.safe_load(path.read_text())
    except yaml.YAMLError as exc:
        raise ValueError(f"not YAML: {exc}") from exc


def _result(record: ClaimRecord) -> PrepareResult:
    return PrepareResult(
        tuple(
            PreparedDevice(tuple(d.request_names), d.pool, d.device, tuple(d.cdi_device_ids), d.share_id)
            for d in record.devices
        )
    )


_DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)  # libyaml when present: half the time of a prepare


def _dump(document: dict[str, Any]) -> bytes:
    return yaml.dump(document, Dumper=_DUMPER, sort_keys=False).encode()


def _mps_gpus(spec: cdi.ClaimSpec) -> list[str]:
    return [d.uuid for d in spec.devices if d.env and d.uuid]
