"""NVIDIA device-plugin sharing configs (``version: v1``, ``sharing.timeSlicing|mps``) → their DRA equivalents.

A config becomes DeviceClasses (with the opaque ``GpuConfig`` of NVIDIA's DRA driver), values for the DRA driver's
chart per node pool (``consumableShares: N``, the closest DRA analogue of ``replicas: N``) and one decision for every
behaviour that changes. Per-node configs are the keys of the plugin's ConfigMap, picked by the node label
``nvidia.com/device-plugin.config=<key>``; each key becomes a node pool of the driver's values.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from kubedra.migrate.workloads import GPU_RESOURCE, SHARED_SUFFIX, class_for, class_selectors, is_gpu_resource
from kubedra.objects.quantity import QuantityError, parse_quantity

CONFIG_LABEL = "nvidia.com/device-plugin.config"
GPU_CONFIG_VERSION = "resource.nvidia.com/v1beta1"
MI = 1024 * 1024
_TOP_KEYS = {"version", "flags", "resources", "sharing", "imex"}


def is_plugin_config(data: Any) -> bool:
    """A device-plugin config document: no kind, ``version`` and only the config's top-level keys."""
    return (
        isinstance(data, dict) and "kind" not in data and "version" in data and set(map(str, data)) <= _TOP_KEYS
    )


@dataclass
class PluginConversion:
    """What one config (one ConfigMap key, or a bare config) became."""

    classes: list[dict[str, Any]] = field(default_factory=list)
    values: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)  # behaviours that change, decisions to make
    problems: list[tuple[str, str]] = field(default_factory=list)  # (field path, message)


def _gpu_config(strategy: str, replicas: int, memory: str | None) -> tuple[dict[str, Any], list[str]]:
    notes: list[str] = []
    sharing: dict[str, Any] = {"strategy": strategy}
    if strategy == "TimeSlicing":
        sharing["timeSlicingConfig"] = {"interval": "Default"}
    else:
        mps: dict[str, Any] = {"defaultActiveThreadPercentage": 100 // replicas}
        if memory is not None:
            per_replica = parse_quantity(memory).as_int64() // replicas // MI
            mps["defaultPinnedDeviceMemoryLimit"] = f"{per_replica}Mi"
        else:
            notes.append(
                f"MPS: the device plugin pinned memory/{replicas} of each GPU per client; give --gpu-memory (the "
                "GPUs' memory, e.g. 80Gi) to set defaultPinnedDeviceMemoryLimit, or no limit is set"
            )
        sharing["mpsConfig"] = mps
    return {"apiVersion": GPU_CONFIG_VERSION, "kind": "GpuConfig", "sharing": sharing}, notes


def _replicas(entry: dict[str, Any], path: str, out: PluginConversion) -> int | None:
    value = entry.get("replicas")
    if isinstance(value, bool) or not isinstance(value, int):
        out.problems.append((f"{path}.replicas", f"Invalid value: {value!r}: must be an integer"))
        return None
    if value < 2:
        out.problems.append((f"{path}.replicas", f"Invalid value: {value}: number of replicas must be >= 2"))
        return None
    return value


def convert_config(
    config: Any, key: str | None, *, mapped: set[str], classes: set[str], gpu_memory: str | None
) -> PluginConversion:
    """One device-plugin config → DRA. ``key``: its ConfigMap key (None for a bare config); ``mapped``: extended
    resource names an earlier config's class already carries (a name maps to one class cluster-wide); ``classes``:
    class names already written (a later config's class is prefixed with its key). Both are updated."""
    out = PluginConversion()
    if not isinstance(config, dict):
        out.problems.append(("", "a device-plugin config must be a mapping"))
        return out
    if str(config.get("version")) != "v1":
        out.problems.append(("version", f'Unsupported value: "{config.get("version")}": supported values: "v1"'))
        return out
    flags: dict[str, Any] = config["flags"] if isinstance(config.get("flags"), dict) else {}
    mig_strategy = flags.get("migStrategy", "none")
    if mig_strategy == "single":
        out.notes.append(
            "flags.migStrategy single: MIG slices were advertised as nvidia.com/gpu; in DRA they are separate devices "
            "of class mig.nvidia.com: claims for them must use that class (or select a profile)"
        )
    if config.get("resources"):
        out.notes.append("resources (renaming): ignored, as the device plugin itself ignores it today")
    sharing: dict[str, Any] = config["sharing"] if isinstance(config.get("sharing"), dict) else {}
    present = [s for s in ("timeSlicing", "mps") if sharing.get(s)]
    if len(present) > 1:
        out.problems.append(("sharing", "Invalid value: timeSlicing and mps are mutually exclusive"))
        return out
    values: dict[str, Any] = {}
    if key is not None:
        values["nodeSelector"] = {CONFIG_LABEL: key}
    gates: dict[str, bool] = {}
    if not present:
        out.notes.append("no sharing: every GPU is whole, as with gpu.nvidia.com claims")
    for strategy_key in present:
        _convert_sharing(strategy_key, sharing[strategy_key], key, taken=(mapped, classes), gpu_memory=gpu_memory,
                         out=out, values=values, gates=gates)
    if gates:
        values["featureGates"] = dict(sorted(gates.items()))
    out.values = values
    return out


def _convert_sharing(
    strategy_key: str, block: Any, key: str | None, *, taken: tuple[set[str], set[str]], gpu_memory: str | None,
    out: PluginConversion, values: dict[str, Any], gates: dict[str, bool],
) -> None:
    path = f"sharing.{strategy_key}"
    if not isinstance(block, dict) or not isinstance(block.get("resources"), list):
        out.problems.append((f"{path}.resources", "Required value: a list of {name, replicas}"))
        return
    mps = strategy_key == "mps"
    rename = bool(block.get("renameByDefault", False))
    fail_many = block.get("failRequestsGreaterThanOne")
    fail_many = mps if fail_many is None else bool(fail_many)  # the plugin defaults it to true for MPS only
    for i, entry in enumerate(block["resources"]):
        entry_path = f"{path}.resources[{i}]"
        if not isinstance(entry, dict) or not is_gpu_resource(str(entry.get("name", ""))):
            name = entry.get("name") if isinstance(entry, dict) else entry
            out.problems.append(
                (f"{entry_path}.name", f'Unsupported value: "{name}": nvidia.com/gpu or nvidia.com/mig-<profile>')
            )
            continue
        name = str(entry["name"])
        if mps and name != GPU_RESOURCE:
            out.problems.append((f"{entry_path}.name", f'Unsupported value: "{name}": MPS shares full GPUs only'))
            continue
        replicas = _replicas(entry, entry_path, out)
        if replicas is None:
            continue
        if entry.get("rename") or entry.get("devices") not in (None, "all"):
            out.notes.append(f"{entry_path}: rename and devices are ignored, as the device plugin ignores them")
        served = name + SHARED_SUFFIX if rename or entry.get("rename") else name
        mapped, classes = taken
        class_name = _unique_class(class_for(served), key, classes)
        primary = served not in mapped
        if primary and not mps:
            mapped.add(served)
        config, notes = _gpu_config("MPS" if mps else "TimeSlicing", replicas, gpu_memory)
        out.notes.extend(notes)
        selectors = class_selectors(served)
        spec: dict[str, Any] = {"selectors": [{"cel": {"expression": e}} for e in selectors]}
        if name == GPU_RESOURCE:
            spec["config"] = [{"opaque": {"driver": "gpu.nvidia.com", "parameters": config}}]
        if primary and not mps:
            spec["extendedResourceName"] = served
        elif not mps:
            out.notes.append(
                f"DeviceClass {class_name}: no extendedResourceName ({served} maps to one class cluster-wide, an "
                "earlier config's); pods on this pool ask for it with a ResourceClaim of this class"
            )
        out.classes.append({"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
                            "metadata": {"name": class_name}, "spec": spec})
        _behaviour_notes(name, served, replicas, mps=mps, rename=rename and primary, fail_many=fail_many,
                         class_name=class_name, out=out)
        _values_and_gates(name, replicas, mps=mps, values=values, gates=gates)


def _values_and_gates(name: str, replicas: int, *, mps: bool, values: dict[str, Any], gates: dict[str, bool]) -> None:
    if mps:
        gates["MPSSupport"] = True
        return
    gates["TimeSlicingSettings"] = True
    if name == GPU_RESOURCE:  # shares split whole GPUs (the chart's sharing.consumableShares), not MIG devices
        values["consumableShares"] = replicas
        gates["ConsumableShares"] = True


def _behaviour_notes(
    name: str, served: str, replicas: int, *, mps: bool, rename: bool, fail_many: bool, class_name: str,
    out: PluginConversion,
) -> None:
    if mps:
        out.notes.append(
            f"{name} MPS replicas {replicas} -> GpuConfig MPS (defaultActiveThreadPercentage {100 // replicas}) on "
            f"DeviceClass {class_name}: DRA shares a GPU through MPS among the pods of one ResourceClaim, so up to "
            f"{replicas} pods must share a claim (a ResourceClaim, not a template); consumable shares cannot be used "
            "with MPS; driver gate MPSSupport"
        )
    else:
        out.notes.append(
            f"{name} time-slicing replicas {replicas} -> consumableShares {replicas} for the DRA driver: each claim "
            f"takes one share of a GPU; the device plugin's time-slicing never set a timeslice (it only advertised "
            f"{replicas} replicas per GPU), the GpuConfig sets interval Default (driver gate TimeSlicingSettings)"
            if name == GPU_RESOURCE else
            f"{name} time-slicing replicas {replicas}: no consumable shares for MIG devices (shares split whole GPUs "
            f"only); each claim of DeviceClass {class_name} gets a MIG device of its own, and pods that are to share "
            "one share its claim"
        )
        out.notes.append(
            f"{name}: a request for 2 or more used to get replicas, possibly of one GPU; a claim with count N now gets "
            "N different GPUs"
        )
    if rename:
        out.notes.append(
            f"renameByDefault: pods asked for {served}; DeviceClass {class_name} serves that name through DRA "
            "(DRAExtendedResource, on by default from 1.36)" if not mps else
            f"renameByDefault: pods asked for {served}; rewrite them to claims of DeviceClass {class_name}"
        )
    if fail_many:
        out.notes.append(
            "failRequestsGreaterThanOne: DRA has no such switch; reject claims with count > 1 for this class with a "
            "ValidatingAdmissionPolicy if that rule must stay"
        )


def _unique_class(class_name: str, key: str | None, classes: set[str]) -> str:
    """``class_name``, or, when an earlier config wrote it, prefixed with this config's key (numbered when that is
    taken too): two DeviceClasses of one name are one the API server refuses. Added to ``classes``."""
    if class_name in classes:
        label, number = _label(key or ""), 2
        prefixed = f"{label}.{class_name}"
        while prefixed in classes:
            prefixed, number = f"{label}-{number}.{class_name}", number + 1
        class_name = prefixed
    classes.add(class_name)
    return class_name


def _label(key: str) -> str:
    return re.sub(r"[^a-z0-9-]+", "-", key.lower()).strip("-") or "config"


def memory_ok(text: str) -> bool:
    try:
        return parse_quantity(text).as_int64() >= MI
    except QuantityError:
        return False
