"""The article's ``NvidiaGPUConfig`` → CEL selectors on NVIDIA's attributes and an opaque ``GpuConfig``.

NVIDIA's DRA driver publishes ``type`` (``gpu``/``mig``), ``cudaComputeCapability`` (a version) and the
capacity ``memory`` in the ``gpu.nvidia.com`` domain; its opaque config is
``resource.nvidia.com/v1beta1 GpuConfig`` whose time-slice interval is one of ``Default|Short|Medium|Long``
(nvidia-smi levels 0-3). NVIDIA publishes no millisecond values for those levels, so kubedra assumes
nominal lengths — Short ≈ 1 ms, Medium ≈ 4 ms, Long ≈ 16 ms — and maps a written interval to the
nearest on a logarithmic scale (``5ms`` → ``Medium``); no interval → ``Default``.

``sharing.maxSharableGPU: N`` has no API field. The closest real mechanism is consumable capacity as
NVIDIA's ``--consumable-shares=N`` publishes it (``allowMultipleAllocations`` and a ``shares`` capacity
of N, one share per claim); kubedra keeps N as the annotation ``kubedra.io/max-pods-per-device`` on the
converted DeviceClass (and on claims of that class), and the class selects GPUs published with N shares, so a
claim takes one share and at most N pods share a GPU — real Kubernetes semantics, nothing simulator-only.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

from kubedra.objects import formats
from kubedra.objects.nvidia_params import GPU_DRIVER, TIME_SLICE_INTERVALS, check_opaque

MAX_PODS_ANNOTATION = "kubedra.io/max-pods-per-device"
GPU_CONFIG_API_VERSION = "resource.nvidia.com/v1beta1"
TIME_SLICE_NOMINAL_MS = {"Short": 1.0, "Medium": 4.0, "Long": 16.0}
_KNOWN = {"memory", "computeCapability", "mig", "sharing", "sharing.maxSharableGPU"}
_DURATION = re.compile(r"^\s*(?P<value>\d+(?:\.\d+)?)\s*(?P<unit>us|µs|ms|s)?\s*$")
_UNIT_MS = {"us": 0.001, "µs": 0.001, "ms": 1.0, "s": 1000.0, None: 1.0}

Note = tuple[str, str, str, str, str]  # field, written, today, assumed, code


def nearest_time_slice(milliseconds: float) -> str:
    """The NVIDIA time-slice level nearest to ``milliseconds`` (log scale, ties to the shorter)."""
    if milliseconds <= 0:
        return "Short"
    return min(TIME_SLICE_NOMINAL_MS, key=lambda level: abs(math.log(milliseconds / TIME_SLICE_NOMINAL_MS[level])))


def _version_literal(text: str) -> str | None:
    parts = text.strip().lstrip("vV").split(".")
    if not 1 <= len(parts) <= 3 or not all(p.isascii() and p.isdigit() for p in parts):
        return None
    parts += ["0"] * (3 - len(parts))
    return ".".join(str(int(p)) for p in parts)


def _quantity_ok(text: str) -> bool:
    return not formats.quantity(text)


@dataclass
class GpuRequirements:
    """What an NvidiaGPUConfig asks for, in v1 terms."""

    memory: str | None = None
    compute_capability: str | None = None
    device_type: str | None = None
    opaque: dict[str, Any] | None = None
    max_pods_per_device: int | None = None
    notes: list[Note] = field(default_factory=list)
    problems: list[tuple[str, str]] = field(default_factory=list)

    def selectors(self, driver: str) -> list[str]:
        """CEL selectors, one per requirement (so a failing one can be named)."""
        out = []
        domain = f'device.attributes["{driver}"]'
        if self.device_type is not None:
            out.append(f'{domain}.type == "{self.device_type}"')
        if self.compute_capability is not None:
            out.append(f'{domain}.cudaComputeCapability.compareTo(semver("{self.compute_capability}")) >= 0')
        if self.memory is not None:
            out.append(f'device.capacity["{driver}"].memory.compareTo(quantity("{self.memory}")) >= 0')
        if self.max_pods_per_device is not None:
            # GPUs published with N consumable shares (NVIDIA's --consumable-shares=N); each claim takes one share
            # (the shares request policy's default), so at most N claims — N pods — share one GPU.
            capacity = f'device.capacity["{driver}"]'
            out.append(
                f'device.allowMultipleAllocations && "shares" in {capacity} && '
                f'{capacity}.shares.compareTo(quantity("{self.max_pods_per_device}")) == 0'
            )
        return out


def _read_memory(spec: dict[str, Any], req: GpuRequirements) -> None:
    memory = spec.get("memory")
    if memory is None:
        return
    text = str(memory)
    if isinstance(memory, bool) or not _quantity_ok(text):
        req.problems.append(("spec.memory", f'Invalid value: "{text}": must be a quantity such as 40Gi'))
        return
    req.memory = text
    req.notes.append(
        (
            "spec.memory",
            f'memory: "{text}"',
            f'selector device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("{text}")) >= 0',
            f"at least {text} of GPU memory (the article: 'needs 40GB'), not exactly",
            "legacy-memory",
        )
    )


def _read_compute_capability(spec: dict[str, Any], req: GpuRequirements) -> None:
    capability = spec.get("computeCapability")
    if capability is None:
        return
    version = _version_literal(str(capability))
    if version is None or isinstance(capability, bool):
        req.problems.append(
            ("spec.computeCapability", f'Invalid value: "{capability}": must be a version such as "8.0"')
        )
        return
    req.compute_capability = version
    req.notes.append(
        (
            "spec.computeCapability",
            f'computeCapability: "{capability}"',
            f'selector device.attributes["gpu.nvidia.com"].cudaComputeCapability.compareTo(semver("{version}")) >= 0 '
            "(NVIDIA publishes cudaComputeCapability as a version attribute)",
            f"at least {capability} (this GPU generation or a newer one, e.g. an A100 or H100 for 8.0), not exactly "
            f"{capability}: a newer GPU runs code built for {capability}; write == 0 instead of >= 0 to pin it",
            "legacy-compute-capability",
        )
    )


def _read_mig(spec: dict[str, Any], req: GpuRequirements) -> None:
    mig = spec.get("mig")
    if mig is not None and not isinstance(mig, bool):
        req.problems.append(("spec.mig", f"Invalid value: {mig!r}: must be true or false"))
        return
    req.device_type = "mig" if mig else "gpu"
    written = "mig: " + ("not set" if mig is None else str(mig).lower())
    req.notes.append(
        (
            "spec.mig",
            written,
            f'selector device.attributes["gpu.nvidia.com"].type == "{req.device_type}"',
            "a MIG slice (type mig)"
            if mig
            else "a whole GPU, not a MIG slice (type gpu)"
            + ("; assumed because mig is not set" if mig is None else ""),
            "legacy-mig",
        )
    )


def _read_sharing(spec: dict[str, Any], req: GpuRequirements) -> None:
    sharing = spec.get("sharing")
    if sharing is None:
        return
    if not isinstance(sharing, dict):
        req.problems.append(("spec.sharing", "Invalid value: must be an object"))
        return
    strategy = sharing.get("strategy", "TimeSlicing")
    if strategy not in ("TimeSlicing", "MPS"):
        req.problems.append(
            ("spec.sharing.strategy", f'Unsupported value: "{strategy}": supported values: "MPS", "TimeSlicing"')
        )
        return
    out: dict[str, Any] = {"strategy": strategy}
    if strategy == "MPS" and isinstance(sharing.get("mpsConfig"), dict):
        out["mpsConfig"] = sharing["mpsConfig"]
    if strategy == "TimeSlicing":
        slicing = sharing.get("timeSlicingConfig") or {}
        interval = slicing.get("interval") if isinstance(slicing, dict) else None
        level = "Default"
        if interval is not None:
            match = _DURATION.match(str(interval))
            if str(interval) in ("Default", *TIME_SLICE_NOMINAL_MS):
                level = str(interval)
            elif match is None:
                req.problems.append(
                    (
                        "spec.sharing.timeSlicingConfig.interval",
                        f'Invalid value: "{interval}": must be a duration such as 5ms '
                        "or one of Default, Short, Medium, Long",
                    )
                )
                return
            else:
                ms = float(match.group("value")) * _UNIT_MS[match.group("unit")]
                level = nearest_time_slice(ms)
        out["timeSlicingConfig"] = {"interval": level}
        req.notes.append(
            (
                "spec.sharing.timeSlicingConfig.interval",
                f"sharing.strategy: TimeSlicing, interval: {interval}",
                f"opaque GpuConfig ({GPU_CONFIG_API_VERSION}) sharing.timeSlicingConfig.interval: {level}",
                "NVIDIA offers only Default|Short|Medium|Long (nvidia-smi 0-3) and publishes no milliseconds; kubedra "
                "assumes Short~1ms, Medium~4ms, Long~16ms and takes the nearest on a log scale"
                if interval is not None and str(interval) not in ("Default", *TIME_SLICE_NOMINAL_MS)
                else "the level as written",
                "legacy-time-slicing",
            )
        )
    req.opaque = {"apiVersion": GPU_CONFIG_API_VERSION, "kind": "GpuConfig", "sharing": out}


def _read_max_sharable(spec: dict[str, Any], req: GpuRequirements) -> None:
    sharing = spec.get("sharing")
    value = spec.get("sharing.maxSharableGPU")
    if value is None and isinstance(sharing, dict):
        value = sharing.get("maxSharableGPU")
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        req.problems.append(("spec.sharing.maxSharableGPU", f"Invalid value: {value!r}: must be a positive integer"))
        return
    req.max_pods_per_device = value
    req.notes.append(
        (
            "spec.sharing.maxSharableGPU",
            f"sharing.maxSharableGPU: {value} (a key with a dot, beside sharing)",
            "no such field in any API. Closest real mechanisms: consumable capacity (allowMultipleAllocations and a "
            f"'shares' capacity of {value}, NVIDIA's --consumable-shares={value}) or one ResourceClaim shared by "
            f"up to {value} pods",
            f"at most {value} pods per GPU, as consumable shares: the class selects GPUs published with "
            f"allowMultipleAllocations and {value} shares, and each pod's claim takes one share (the request "
            f'policy default); N is also recorded as annotation {MAX_PODS_ANNOTATION}: "{value}"; '
            "time-slicing itself has no pod limit",
            "legacy-max-sharable",
        )
    )


def read_gpu_config(doc: dict[str, Any]) -> GpuRequirements:
    """The requirements of an ``NvidiaGPUConfig`` document, with notes and problems by field."""
    req = GpuRequirements()
    spec = doc.get("spec")
    if not isinstance(spec, dict):
        req.problems.append(("spec", "Required value: NvidiaGPUConfig needs a spec"))
        return req
    for key in spec:
        if key not in _KNOWN:
            req.notes.append(
                (
                    f"spec.{key}",
                    f"{key}: {spec[key]!r}",
                    "nothing",
                    "ignored: not a setting kubedra knows",
                    "legacy-ignored-field",
                )
            )
    _read_memory(spec, req)
    _read_compute_capability(spec, req)
    _read_mig(spec, req)
    _read_sharing(spec, req)
    _read_max_sharable(spec, req)
    return req


# ------------------------------------------------------------------------------------------------------------
# The opaque GpuConfig itself, as NVIDIA's driver decodes it from a claim (strict: unknown fields are errors)

TIME_SLICE_LEVELS = {name: level for level, name in enumerate(TIME_SLICE_INTERVALS)}  # nvidia-smi compute-policy


@dataclass(frozen=True)
class GpuSharing:
    """``GpuConfig.sharing`` after validation (``validate.go``): a strategy and its settings."""

    strategy: str | None = None  # None: no sharing configured
    time_slice_level: int = 0
    mps_active_thread_percentage: int | None = None
    mps_pinned_memory_limit: str | None = None  # a quantity
    mps_per_device_pinned_memory_limit: dict[str, str] = field(default_factory=dict)


class GpuConfigError(ValueError):
    """A GpuConfig the driver must refuse; the message names the field."""


def parse_gpu_config(parameters: Any) -> GpuSharing:
    """The sharing a ``resource.nvidia.com/v1beta1`` ``GpuConfig`` asks for; GpuConfigError when NVIDIA's driver
    would refuse it (:func:`kubedra.objects.nvidia_params.check_opaque`, the rules ``kubedra validate`` reports) or
    when it is another of NVIDIA's kinds, which kubedra's node driver does not apply."""
    checked = check_opaque(GPU_DRIVER, parameters, base="")
    if checked.problems:
        where, message = checked.problems[0]
        raise GpuConfigError(f"{where or 'parameters'}: {message}")
    if parameters.get("kind") != "GpuConfig":
        raise GpuConfigError(f"parameters: kubedra's node driver applies only GpuConfig, not {parameters.get('kind')}")
    sharing = parameters.get("sharing")
    if sharing is None:
        return GpuSharing()
    if sharing["strategy"] == "TimeSlicing":
        interval = (sharing.get("timeSlicingConfig") or {}).get("interval", "Default")
        return GpuSharing("TimeSlicing", time_slice_level=TIME_SLICE_LEVELS[interval])
    mps = sharing.get("mpsConfig") or {}
    limit = mps.get("defaultPinnedDeviceMemoryLimit")
    per_device = mps.get("defaultPerDevicePinnedMemoryLimit") or {}
    return GpuSharing(
        "MPS",
        mps_active_thread_percentage=mps.get("defaultActiveThreadPercentage"),
        mps_pinned_memory_limit=None if limit is None else str(limit),
        mps_per_device_pinned_memory_limit={str(k): str(v) for k, v in per_device.items()},
    )
