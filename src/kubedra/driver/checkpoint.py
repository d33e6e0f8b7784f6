"""The checkpoint of prepared claims: versioned, checksummed JSON (pure; ``files.py`` writes it atomically).

Shape (``checkpoint.json``)::

    {"version": 1, "checksum": "<sha256 of data, canonical JSON>", "data": {
        "nodeBootID": "...",
        "preparedClaims": {"<uid>": {"state": "PrepareStarted" | "PrepareCompleted", "namespace": ..., "name": ...,
                                      "devices": [...], "timeSlice": {"<gpu uuid>": <nvidia-smi level>}}}}}

``PrepareStarted`` is written before anything is changed on the node and ``PrepareCompleted`` after the CDI spec
exists, so a restart knows which claims it must roll back. A different boot ID (the node rebooted: devices reset,
``/var/run/cdi`` is a tmpfs) invalidates every claim.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

VERSION = 1
PREPARE_STARTED = "PrepareStarted"
PREPARE_COMPLETED = "PrepareCompleted"


class CorruptCheckpointError(Exception):
    """The file is not a checkpoint this driver wrote (bad JSON, version, checksum or shape)."""


@dataclass
class DeviceRecord:
    request_names: list[str]
    pool: str
    device: str
    cdi_device_ids: list[str]
    share_id: str | None = None
    admin_access: bool = False
    # a MIG device: {parentUUID, profileID, start, size} before it is created, then all of MigDevice's fields
    mig: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "requestNames": self.request_names,
            "pool": self.pool,
            "device": self.device,
            "cdiDeviceIDs": self.cdi_device_ids,
            "shareID": self.share_id,
            "adminAccess": self.admin_access,
        }
        if self.mig is not None:
            data["mig"] = self.mig
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> DeviceRecord:
        return cls(
            list(data["requestNames"]),
            str(data["pool"]),
            str(data["device"]),
            list(data["cdiDeviceIDs"]),
            data.get("shareID"),
            bool(data.get("adminAccess", False)),
            dict(data["mig"]) if data.get("mig") is not None else None,
        )


@dataclass
class ClaimRecord:
    state: str
    namespace: str
    name: str
    devices: list[DeviceRecord] = field(default_factory=list)
    time_slice: dict[str, int] = field(default_factory=dict)  # GPU UUID -> nvidia-smi time-slice level
    cdi_spec: dict[str, Any] | None = None  # the spec written, so a lost one is written again exactly
    mps: dict[str, Any] | None = None  # the claim's MPS control daemon: {"gpus": [UUID...], "settings": [line...]}

    def to_json(self) -> dict[str, Any]:
        return {
            "state": self.state,
            "namespace": self.namespace,
            "name": self.name,
            "devices": [d.to_json() for d in self.devices],
            "timeSlice": dict(sorted(self.time_slice.items())),
            "cdiSpec": self.cdi_spec,
            **({"mps": self.mps} if self.mps is not None else {}),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ClaimRecord:
        state = data["state"]
        if state not in (PREPARE_STARTED, PREPARE_COMPLETED):
            raise ValueError(f"unknown state {state!r}")
        return cls(
            state,
            str(data["namespace"]),
            str(data["name"]),
            [DeviceRecord.from_json(d) for d in data["devices"]],
            {str(k): int(v) for k, v in (data.get("timeSlice") or {}).items()},
            data.get("cdiSpec"),
            dict(data["mps"]) if data.get("mps") is not None else None,
        )


@dataclass
class Checkpoint:
    boot_id: str
    claims: dict[str, ClaimRecord] = field(default_factory=dict)


def _canonical(data: Any) -> bytes:
    return json.dumps(data, sort_keys=True, separators=(",", ":")).encode()


def encode(checkpoint: Checkpoint) -> bytes:
    data = {
        "nodeBootID": checkpoint.boot_id,
        "preparedClaims": {uid: c.to_json() for uid, c in sorted(checkpoint.claims.items())},
    }
    document = {"version": VERSION, "checksum": hashlib.sha256(_canonical(data)).hexdigest(), "data": data}
    return json.dumps(document, indent=1, sort_keys=True).encode() + b"\n"


def decode(raw: bytes) -> Checkpoint:
    """The checkpoint in ``raw``; CorruptCheckpointError says why it cannot be trusted."""
    try:
        document = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CorruptCheckpointError(f"not JSON ({exc})") from exc
    if not isinstance(document, dict) or document.get("version") != VERSION:
        version = document.get("version") if isinstance(document, dict) else None
        raise CorruptCheckpointError(f"unsupported checkpoint version {version!r} (this driver writes {VERSION})")
    data = document.get("data")
    if not isinstance(data, dict):
        raise CorruptCheckpointError("no data")
    if hashlib.sha256(_canonical(data)).hexdigest() != document.get("checksum"):
        raise CorruptCheckpointError("checksum mismatch")
    try:
        claims = {str(uid): ClaimRecord.from_json(c) for uid, c in data["preparedClaims"].items()}
        return Checkpoint(str(data["nodeBootID"]), claims)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise CorruptCheckpointError(f"unexpected shape ({exc})") from exc
