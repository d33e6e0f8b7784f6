"""NVIDIA's opaque device parameters, checked as NVIDIA's DRA driver checks them at NodePrepareResources.

The API server takes any JSON object as ``opaque.parameters``; NVIDIA's driver decodes the objects meant for it
with a *strict* decoder (an unknown field, a wrong type or an unregistered kind fails), then ``Normalize()`` and
``Validate()`` them, so a claim it would refuse is accepted, allocated and only fails on the node. This module
holds the driver's rules, read from ``api/nvidia.com/resource/v1beta1`` (api.go, gpuconfig.go, migconfig.go,
vfiodeviceconfig.go, iommu.go, computedomainconfig.go, sharing.go, validate.go) and the kubelet plugins'
``device_state.go`` of kubernetes-sigs/dra-driver-nvidia-gpu at commit
95932046683719c43b6a0dd9613c2e5aad5d6703 (formerly NVIDIA/k8s-dra-driver-gpu):

* ``gpu.nvidia.com`` takes ``GpuConfig``, ``MigDeviceConfig`` and ``VfioDeviceConfig``;
  ``compute-domain.nvidia.com`` takes ``ComputeDomainChannelConfig`` and ``ComputeDomainDaemonConfig``; all of
  ``apiVersion: resource.nvidia.com/v1beta1``. Parameters for any other driver are not NVIDIA's and are not read.
* ``sharing.strategy`` is ``TimeSlicing`` or ``MPS``; ``MigDeviceConfig.sharing`` has no ``timeSlicingConfig``;
  a GpuConfig's TimeSlicing refuses an ``mpsConfig`` and its MPS a ``timeSlicingConfig`` (``GetTimeSlicingConfig``,
  ``GetMpsConfig``); a ``timeSlicingConfig`` written without ``interval`` is refused (the driver dereferences the
  missing interval); the interval is ``Default|Short|Medium|Long``.
* ``mpsConfig.defaultActiveThreadPercentage`` is an integer in 0..100; pinned memory limits are quantities of at
  least 1Mi (the driver passes whole MiB to MPS and refuses 0); per-device keys are a device index or a UUID.
* ``iommu.backendPolicy`` is ``LegacyOnly`` (the default) or ``PreferIommuFD``; ``domainID`` is required.

What a manifest cannot show comes back as *notes*, not problems: the driver refuses TimeSlicing unless its feature
gate ``TimeSlicingSettings`` is on and MPS unless ``MPSSupport`` is (both alpha, off by default: deployment
settings of the driver), VFIO devices exist only with ``PassthroughSupport``, and a per-device key must name a
device the claim is allocated. :func:`check_opaque` returns both as (field path, message) pairs; the loader's
validation (:mod:`kubedra.objects.validate`) reports the problems and ``kubedra validate`` prints the notes.
kubedra's own node driver (:func:`kubedra.objects.gpuconfig.parse_gpu_config`) applies these same rules.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kubedra.objects.quantity import Quantity

FieldProblem = tuple[str, str]

SOURCE_COMMIT = "95932046683719c43b6a0dd9613c2e5aad5d6703"
API_VERSION = "resource.nvidia.com/v1beta1"
GPU_DRIVER = "gpu.nvidia.com"
COMPUTE_DOMAIN_DRIVER = "compute-domain.nvidia.com"
DRIVER_KINDS = {
    GPU_DRIVER: ("GpuConfig", "MigDeviceConfig", "VfioDeviceConfig"),
    COMPUTE_DOMAIN_DRIVER: ("ComputeDomainChannelConfig", "ComputeDomainDaemonConfig"),
}
# Every kind NVIDIA's strict decoder knows (api.go's AddKnownTypes): it decodes, the plugin then refuses it.
REGISTERED_KINDS = (*DRIVER_KINDS[GPU_DRIVER], *DRIVER_KINDS[COMPUTE_DOMAIN_DRIVER], "ComputeDomain",
                    "ComputeDomainClique")
STRATEGIES = ("TimeSlicing", "MPS")
STRATEGY_GATES = {"TimeSlicing": "TimeSlicingSettings", "MPS": "MPSSupport"}
TIME_SLICE_INTERVALS = ("Default", "Short", "Medium", "Long")
IOMMU_BACKEND_POLICIES = ("LegacyOnly", "PreferIommuFD")
CHANNEL_ALLOCATION_MODES = ("Single", "All")
MIN_PINNED_MEMORY = 1024 * 1024  # the driver's Megabyte(): Value()/1024/1024 must be > 0
_TYPE_META = ("apiVersion", "kind")
_MPS_FIELDS = ("defaultActiveThreadPercentage", "defaultPinnedDeviceMemoryLimit", "defaultPerDevicePinnedMemoryLimit",
               "multiUser")


@dataclass
class Checked:
    """What NVIDIA's driver would refuse (``problems``) and what depends on its deployment (``notes``)."""

    problems: list[FieldProblem] = field(default_factory=list)
    notes: list[FieldProblem] = field(default_factory=list)


def is_nvidia_driver(driver: str) -> bool:
    return driver in DRIVER_KINDS


class _Walk:
    """Collects problems and notes under ``base`` (the path of ``parameters``)."""

    def __init__(self, base: str) -> None:
        self.base = base
        self.out = Checked()

    def at(self, rel: str) -> str:
        return _join(self.base, rel) if rel else self.base

    def bad(self, rel: str, message: str) -> None:
        self.out.problems.append((self.at(rel), message))

    def note(self, rel: str, message: str) -> None:
        self.out.notes.append((self.at(rel), message))

    def obj(self, value: Any, rel: str, allowed: tuple[str, ...]) -> dict[str, Any] | None:
        """``value`` as a JSON object whose fields are all in ``allowed`` (strict decoding); None if absent."""
        if value is None:
            return None
        if not isinstance(value, dict):
            self.bad(rel, f"must be an object, not {_json_type(value)}")
            return None
        for key in value:
            if key not in allowed:
                name = f"{rel}.{key}" if rel else str(key)
                self.bad(name, f'unknown field "{key}": NVIDIA\'s driver decodes its parameters strictly')
        return value

    def string(self, data: dict[str, Any], key: str, rel: str) -> str | None:
        value = data.get(key)
        if value is None:
            return None
        if not isinstance(value, str):
            self.bad(_join(rel, key), f"must be a string, not {_json_type(value)}")
            return None
        return value

    def boolean(self, data: dict[str, Any], key: str, rel: str) -> None:
        value = data.get(key)
        if value is not None and not isinstance(value, bool):
            self.bad(_join(rel, key), f"must be true or false, not {_json_type(value)}")

    def pinned_limit(self, value: Any, rel: str) -> None:
        """A quantity (string or number, as resource.Quantity decodes) of at least 1Mi."""
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            self.bad(rel, f"must be a quantity such as 10Gi, not {_json_type(value)}")
            return
        try:
            amount = Quantity.parse(str(value)).value()
        except (ValueError, ArithmeticError):
            self.bad(rel, f'must be a quantity such as 10Gi, not "{value}"')
            return
        if amount < MIN_PINNED_MEMORY:
            self.bad(rel, f"invalid limit: value set too low: {value} (NVIDIA's driver needs at least 1Mi)")


def _join(rel: str, key: str) -> str:
    return f"{rel}.{key}" if rel else key


def _json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    return "an object" if isinstance(value, dict) else "null"


def _mps_config(w: _Walk, value: Any, rel: str) -> None:
    mps = w.obj(value, rel, _MPS_FIELDS)
    if mps is None:
        return
    percentage = mps.get("defaultActiveThreadPercentage")
    where = f"{rel}.defaultActiveThreadPercentage"
    if percentage is not None:
        if isinstance(percentage, bool) or not isinstance(percentage, int):
            w.bad(where, f"must be an integer, not {_json_type(percentage)}")
        elif percentage < 0:
            w.bad(where, "active thread percentage must not be negative")
        elif percentage > 100:
            w.bad(where, "active thread percentage must not be greater than 100")
    if mps.get("defaultPinnedDeviceMemoryLimit") is not None:
        w.pinned_limit(mps["defaultPinnedDeviceMemoryLimit"], f"{rel}.defaultPinnedDeviceMemoryLimit")
    per_device = mps.get("defaultPerDevicePinnedMemoryLimit")
    where = f"{rel}.defaultPerDevicePinnedMemoryLimit"
    if per_device is not None and not isinstance(per_device, dict):
        w.bad(where, f"must be an object mapping a device index or UUID to a quantity, not {_json_type(per_device)}")
    elif per_device:
        for key, limit in per_device.items():
            _device_key(w, str(key), f"{where}[{key}]")
            w.pinned_limit(limit, f"{where}[{key}]")
        w.note(where, "each key must be the index (0, 1, ...) of a device this config applies to, or the UUID of "
                      "one; which devices those are is known only once the claim is allocated")
    w.boolean(mps, "multiUser", rel)


def _device_key(w: _Walk, key: str, rel: str) -> None:
    """strconv.Atoi or a device UUID: an integer must be >= 0; anything else must look like an NVIDIA UUID."""
    text = key[1:] if key[:1] in "+-" else key
    if text.isascii() and text.isdigit():
        if key.startswith("-") and int(text) > 0:
            w.bad(rel, f"invalid device: invalid device index: {key}")
    elif not key.startswith(("GPU-", "MIG-")):
        w.bad(rel, f"invalid device: unable to parse key as an integer: {key} (nor is it a GPU- or MIG- UUID)")


def _sharing(w: _Walk, value: Any, *, mig: bool) -> None:
    fields = ("strategy", "mpsConfig") if mig else ("strategy", "timeSlicingConfig", "mpsConfig")
    sharing = w.obj(value, "sharing", fields)
    if sharing is None:
        return
    if sharing.get("strategy") is not None and not isinstance(sharing["strategy"], str):
        w.string(sharing, "strategy", "sharing")
        return
    strategy = w.string(sharing, "strategy", "sharing")
    if strategy not in STRATEGIES:
        w.bad("sharing.strategy", f"unknown GPU sharing strategy: {strategy or ''}, supported GPU sharing "
                                  f"strategies: {', '.join(STRATEGIES)}")
        return
    gate = STRATEGY_GATES[strategy]
    w.note("sharing.strategy", f'NVIDIA\'s driver refuses "{strategy}" unless deployed with its feature gate {gate} '
                               "(alpha, off by default; kubedra's node driver needs none)")
    slicing, mps = sharing.get("timeSlicingConfig"), sharing.get("mpsConfig")
    if strategy == "TimeSlicing":
        if mig:
            if mps is not None:
                _mps_config(w, mps, "sharing.mpsConfig")
                w.note("sharing.mpsConfig", "ignored: a MIG device shared by TimeSlicing takes no mpsConfig")
            return
        if mps is not None:
            w.bad("sharing.mpsConfig", "cannot use MpsConfig with the 'TimeSlicing' strategy")
        config = w.obj(slicing, "sharing.timeSlicingConfig", ("interval",))
        if config is not None:
            interval = w.string(config, "interval", "sharing.timeSlicingConfig")
            if "interval" not in config or config["interval"] is None:
                w.bad("sharing.timeSlicingConfig.interval", "required: NVIDIA's driver fails on a timeSlicingConfig "
                                                            "without an interval (leave timeSlicingConfig out for "
                                                            "Default)")
            elif interval is not None and interval not in TIME_SLICE_INTERVALS:
                w.bad("sharing.timeSlicingConfig.interval",
                      f"unknown time-slice interval: {interval}, supported time-slice intervals: "
                      f"{', '.join(TIME_SLICE_INTERVALS)}")
        return
    if slicing is not None and not mig:
        w.obj(slicing, "sharing.timeSlicingConfig", ("interval",))
        w.bad("sharing.timeSlicingConfig", "cannot use TimeSlicingConfig with the 'MPS' strategy")
    _mps_config(w, mps, "sharing.mpsConfig")


def _vfio(w: _Walk, parameters: dict[str, Any]) -> None:
    w.note("kind", "VfioDeviceConfig applies only to VFIO devices, which NVIDIA's driver publishes only with its "
                   "feature gate PassthroughSupport (alpha, off by default)")
    iommu = w.obj(parameters.get("iommu"), "iommu", ("backendPolicy", "enableAPIDevice"))
    if iommu is None:
        return
    policy = w.string(iommu, "backendPolicy", "iommu")
    if policy and policy not in IOMMU_BACKEND_POLICIES:  # "" or absent: Normalize() makes it LegacyOnly
        w.bad("iommu.backendPolicy", f"unknown IOMMU backend policy: {policy}, supported IOMMU backend policies: "
                                     f"{', '.join(IOMMU_BACKEND_POLICIES)}")
    w.boolean(iommu, "enableAPIDevice", "iommu")


def _compute_domain(w: _Walk, parameters: dict[str, Any], kind: str) -> None:
    if parameters.get("domainID") in (None, ""):
        w.bad("domainID", "domainID cannot be empty")
    else:
        w.string(parameters, "domainID", "")
    if kind == "ComputeDomainChannelConfig":
        mode = w.string(parameters, "allocationMode", "")
        if mode and mode not in CHANNEL_ALLOCATION_MODES:
            w.note("allocationMode", f'"{mode}" is neither Single nor All: NVIDIA\'s driver treats it as Single')


def check_opaque(driver: str, parameters: Any, base: str = "parameters") -> Checked:
    """``parameters`` of an opaque config for ``driver`` as NVIDIA's driver decodes and validates them; paths
    start with ``base``. Nothing for a driver that is not NVIDIA's."""
    w = _Walk(base)
    kinds = DRIVER_KINDS.get(driver)
    if kinds is None:
        return w.out
    if not isinstance(parameters, dict):
        w.bad("", f"must be an object, not {_json_type(parameters)}")
        return w.out
    api_version = w.string(parameters, "apiVersion", "")
    kind = w.string(parameters, "kind", "")
    if not kind:
        w.bad("kind", f"required: Object 'Kind' is missing; {driver} takes {', '.join(kinds)}")
    if not api_version:
        w.bad("apiVersion", f"required: {API_VERSION}")
    elif api_version != API_VERSION:
        w.bad("apiVersion", f'no kind "{kind}" is registered for version "{api_version}": NVIDIA\'s driver reads '
                            f"{API_VERSION}")
    if not kind:
        return w.out
    if kind not in kinds:
        known = "decodes, but the driver does not apply it" if kind in REGISTERED_KINDS else "is not registered"
        w.bad("kind", f'unsupported kind "{kind}" for {driver} ({known}): supported kinds: {", ".join(kinds)}')
        return w.out
    if kind in ("GpuConfig", "MigDeviceConfig"):
        w.obj(parameters, "", (*_TYPE_META, "sharing"))
        _sharing(w, parameters.get("sharing"), mig=kind == "MigDeviceConfig")
    elif kind == "VfioDeviceConfig":
        w.obj(parameters, "", (*_TYPE_META, "iommu"))
        _vfio(w, parameters)
    else:
        extra = ("allocationMode",) if kind == "ComputeDomainChannelConfig" else ()
        w.obj(parameters, "", (*_TYPE_META, "domainID", *extra))
        _compute_domain(w, parameters, kind)
    return w.out
