"""CDI specs, one per claim, named and shaped as NVIDIA's driver writes them; pure apart from ``files.py``.

File ``<cdi root>/k8s.gpu.nvidia.com-claim_<claimUID>.yaml``, kind ``k8s.gpu.nvidia.com/claim``, one device
``<claimUID>-<device>`` per prepared device (its ``/dev/nvidia<minor>`` node and ``NVIDIA_VISIBLE_DEVICES`` with
the UUIDs of its request's GPUs; a MIG device: its parent's node, the nvidia-caps nodes of its GPU and compute
instances, and its ``MIG-`` UUID), the control nodes every GPU container needs at spec level. The kubelet gets
``k8s.gpu.nvidia.com/claim=<claimUID>-<device>``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

VENDOR = "k8s.gpu.nvidia.com"
CLASS = "claim"
KIND = f"{VENDOR}/{CLASS}"
CDI_VERSION = "0.6.0"
SPEC_PREFIX = f"{VENDOR}-{CLASS}_"
SPEC_SUFFIX = ".yaml"
CONTROL_NODES = ("/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools")
_SPEC_NAME = re.compile(rf"^{re.escape(SPEC_PREFIX)}(?P<uid>[0-9a-fA-F-]+){re.escape(SPEC_SUFFIX)}$")


def spec_file_name(claim_uid: str) -> str:
    return f"{SPEC_PREFIX}{claim_uid}{SPEC_SUFFIX}"


def claim_of_spec_file(name: str) -> str | None:
    """The claim UID a spec file belongs to, or None for files that are not this driver's claim specs."""
    match = _SPEC_NAME.match(name)
    return match["uid"] if match else None


def cdi_device_name(claim_uid: str, device: str) -> str:
    return f"{claim_uid}-{device}"


def cdi_device_id(claim_uid: str, device: str) -> str:
    return f"{KIND}={cdi_device_name(claim_uid, device)}"


@dataclass(frozen=True, slots=True)
class CdiDevice:
    """What a container needs for one prepared GPU."""

    device: str  # gpu-0
    minor: int
    visible: tuple[str, ...]  # UUIDs for NVIDIA_VISIBLE_DEVICES
    env: tuple[str, ...] = ()
    mounts: tuple[tuple[str, str, tuple[str, ...]], ...] = ()  # (hostPath, containerPath, options)
    uuid: str = ""
    nodes: tuple[str, ...] = ()  # more device nodes: a MIG device's /dev/nvidia-caps/nvidia-cap<N> for its GI and CI


@dataclass
class ClaimSpec:
    claim_uid: str
    devices: list[CdiDevice] = field(default_factory=list)


def spec_document(spec: ClaimSpec) -> dict[str, Any]:
    """The CDI spec as a document (YAML-serialisable)."""
    devices = []
    for d in spec.devices:
        edits: dict[str, Any] = {
            "env": [f"NVIDIA_VISIBLE_DEVICES={','.join(d.visible)}", *d.env],
            "deviceNodes": [{"path": f"/dev/nvidia{d.minor}"}, *({"path": n} for n in d.nodes)],
        }
        if d.mounts:
            edits["mounts"] = [
                {"hostPath": host, "containerPath": container, "options": list(options)}
                for host, container, options in d.mounts
            ]
        devices.append({"name": cdi_device_name(spec.claim_uid, d.device), "containerEdits": edits})
    return {
        "cdiVersion": CDI_VERSION,
        "kind": KIND,
        "containerEdits": {"deviceNodes": [{"path": p} for p in CONTROL_NODES]},
        "devices": devices,
    }
