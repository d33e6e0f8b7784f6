"""What would make it fit, kind ``toleration``: a node taint (the pod's ``tolerations``) or a device taint (the
request's ``tolerations``) tolerated; cost 1 for a NoSchedule taint, 2 for NoExecute, one more for a device taint
(which usually marks an unhealthy GPU). Proven as every suggestion is (``sim.whatif``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import msgspec

from kubedra.cluster.state import ClusterState, PodRecord
from kubedra.objects.model import DeviceToleration, ResourceClaim, Toleration
from kubedra.sim.whatif import (
    EFFECT_RISK,
    Cost,
    Inputs,
    Limits,
    Suggestion,
    _copy,
    _fits,
    _on,
    _pending_claims,
    _template_of,
)
from kubedra.sim.whatif_patches import claim_patch, pod_toleration


def _node_taints(state: ClusterState, record: PodRecord) -> list[tuple[str, str, str]]:
    from kubedra.scheduler.nodefit import taint_reason

    seen: dict[tuple[str, str, str], None] = {}
    for node in state.nodes.values():
        if taint_reason(record.pod, node) is None:
            continue
        for taint in node.spec.taints:
            if taint.effect in EFFECT_RISK:
                seen.setdefault((taint.key, taint.value, taint.effect))
    return list(seen)


def _device_taints(state: ClusterState) -> list[tuple[str, str, str]]:
    seen: dict[tuple[str, str, str], None] = {}
    for slice_ in state.slices:
        for device in slice_.spec.devices:
            for taint in device.taints:
                if taint.effect in EFFECT_RISK:
                    seen.setdefault((taint.key, taint.value, taint.effect))
    for rule in state.taint_rules:
        taint = rule.spec.taint
        if taint.effect in EFFECT_RISK:
            seen.setdefault((taint.key, taint.value, taint.effect))
    return list(seen)


def _tolerating_pod(record: PodRecord, key: str, value: str, effect: str) -> PodRecord:
    pod = record.pod
    toleration = Toleration(key=key, operator="Equal", value=value, effect=effect)
    spec = msgspec.structs.replace(pod.spec, tolerations=[*pod.spec.tolerations, toleration])
    return dataclasses.replace(record, pod=msgspec.structs.replace(pod, spec=spec))


def _tolerating_claim(claim: ResourceClaim, key: str, value: str, effect: str) -> ResourceClaim:
    toleration = DeviceToleration(key=key, operator="Equal", value=value, effect=effect)
    requests = []
    for r in claim.spec.devices.requests:
        exactly = r.exactly and msgspec.structs.replace(r.exactly, tolerations=[*r.exactly.tolerations, toleration])
        requests.append(msgspec.structs.replace(r, exactly=exactly, first_available=[
            msgspec.structs.replace(s, tolerations=[*s.tolerations, toleration]) for s in r.first_available]))
    devices = msgspec.structs.replace(claim.spec.devices, requests=requests)
    return msgspec.structs.replace(claim, spec=msgspec.structs.replace(claim.spec, devices=devices))


def _taint_text(key: str, value: str, effect: str) -> str:
    return f"{key}={value}:{effect}" if value else f"{key}:{effect}"


def tolerations(inputs: Inputs, record: PodRecord, limits: Limits) -> Iterator[Suggestion]:
    state = inputs.state
    tried = 0
    for key, value, effect in _node_taints(state, record):
        if tried >= limits.taints:
            return
        tried += 1
        tainted = [n for n, node in state.nodes.items()
                   if any((t.key, t.value, t.effect) == (key, value, effect) for t in node.spec.taints)]
        fitting = _fits(inputs, _copy(inputs), _tolerating_pod(record, key, value, effect), tainted,
                        limits.nodes_checked)
        if fitting:
            taint = _taint_text(key, value, effect)
            patch = pod_toleration(record, Toleration(key=key, operator="Equal", value=value, effect=effect))
            yield Suggestion(f"fits on {_on(fitting)} if the pod tolerated the node taint {taint}",
                             Cost("toleration", EFFECT_RISK[effect], "risk", f"tolerate a {effect} node taint"),
                             {"target": "pod", "key": key, "value": value, "effect": effect,
                              "patches": [patch] if patch is not None else []}, fitting)
    pending = _pending_claims(state, record)
    if not pending:
        return
    for key, value, effect in _device_taints(state):
        if tried >= limits.taints:
            return
        tried += 1
        changed: dict[str, ResourceClaim] = {k: _tolerating_claim(c, key, value, effect) for k, c in pending}
        fitting = _fits(inputs, _copy(inputs, claims=dict(changed)), record, None, limits.nodes_checked)
        if fitting:
            taint = _taint_text(key, value, effect)
            claims = [_template_of(record, k) or k for k, _ in pending]
            patches = {name: claim_patch(c, _template_of(record, k), k, changed[k])  # one per object written
                       for name, (k, c) in zip(claims, pending, strict=True)}
            yield Suggestion(
                f"fits on {_on(fitting)} if {', '.join(claims)} tolerated the device taint {taint}",
                Cost("toleration", EFFECT_RISK[effect] + 1, "risk", f"tolerate a {effect} device taint"),
                {"target": "claims", "claims": claims, "key": key, "value": value, "effect": effect,
                 "patches": list(patches.values())}, fitting)
