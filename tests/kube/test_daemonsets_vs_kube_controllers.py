"""DaemonSets: kubedra against the real DaemonSet controller, resourceclaim controller and kube-scheduler v1.37.2.

Each scenario in ``scenarios-daemonsets/`` is given to the test control plane (kube-controller-manager running
``daemonset-controller``) and to ``kubedra simulate``. Pod names end in random characters on both sides, so pods are
compared by the node the controller made each for (its ``matchFields metadata.name`` pin): which nodes got a pod,
where it bound and with which devices, a pending pod's message, and the pod as the controller wrote it (owner,
labels but the revision hash's value, tolerations, affinity, generateName).
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml
from tests.controlplane.fixture import ControlPlane, running_control_plane
from tests.kube.vs_kube_scheduler import (
    DRIVER,
    PATHS,
    TIMEOUT_SECONDS,
    _decided,
    _path,
    _settled,
    namespace_claims,
    pending_message,
)

from kubedra.objects.load import load_text
from kubedra.objects.model import to_dict
from kubedra.sim.scenario import build_scenario
from kubedra.sim.simulate import simulate

pytestmark = pytest.mark.controlplane

SCENARIOS = Path(__file__).resolve().parent / "scenarios-daemonsets"
CONTROLLERS = ("resourceclaim-controller", "daemonset-controller")
ORDER = ["DeviceClass", "Node", "ResourceSlice", "ResourceClaimTemplate", "DaemonSet"]
NAMESPACED = {"ResourceClaimTemplate", "DaemonSet"}

Outcome = dict[str, dict[str, Any]]  # target node -> what its daemon pod became


@pytest.fixture(scope="module")
def plane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlane]:
    with running_control_plane(tmp_path_factory.mktemp("vs-daemonsets"), controllers=CONTROLLERS) as started:
        yield started


def _docs(path: Path, namespace: str, driver: str) -> list[dict[str, Any]]:
    docs = list(yaml.safe_load_all(path.read_text().replace(DRIVER, driver)))
    for doc in docs:
        if doc["kind"] in NAMESPACED:
            doc["metadata"]["namespace"] = namespace
    return sorted(docs, key=lambda d: ORDER.index(d["kind"]))


def _target(pod: Mapping[str, Any]) -> str:
    terms = pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    return str(terms["nodeSelectorTerms"][0]["matchFields"][0]["values"][0])


def _shape(pod: Mapping[str, Any], node: str | None, devices: list[tuple[str, str]], message: str) -> dict[str, Any]:
    """What is compared of one daemon pod (``controller-revision-hash`` only present: kubedra's hash is its own)."""
    meta, spec = pod["metadata"], pod["spec"]
    labels = dict(meta.get("labels", {}))
    labels["controller-revision-hash"] = bool(labels.get("controller-revision-hash"))
    owners = [{k: o.get(k) for k in ("apiVersion", "kind", "name", "controller", "blockOwnerDeletion")}
              for o in meta.get("ownerReferences", [])]
    return {"node": node, "devices": sorted(devices), "message": message, "labels": labels, "owners": owners,
            "generateName": meta.get("generateName"), "tolerations": spec.get("tolerations", []),
            "affinity": spec.get("affinity"), "nodeSelector": spec.get("nodeSelector", {})}


def run_real(plane: ControlPlane, docs: list[dict[str, Any]], namespace: str) -> Outcome:
    plane.request("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                                  "metadata": {"name": namespace}})
    daemonsets = f"/apis/apps/v1/namespaces/{namespace}/daemonsets"
    for doc in docs:
        path = daemonsets if doc["kind"] == "DaemonSet" else _path(doc)
        plane.request("POST", path, doc)
    pods_path = f"/api/v1/namespaces/{namespace}/pods"

    def synced() -> bool:
        sets = plane.get(daemonsets)["items"]
        pods = plane.get(pods_path)["items"]
        return all(s.get("status", {}).get("observedGeneration") == s["metadata"]["generation"] for s in sets) and \
            len(pods) == sum(s.get("status", {}).get("desiredNumberScheduled", -1) for s in sets) and \
            all(_decided(p) for p in pods)

    plane.wait_for(synced, timeout=TIMEOUT_SECONDS, what="the DaemonSet controller's pods")
    pods = _settled(plane, pods_path)
    claims = namespace_claims(plane, namespace)
    out: Outcome = {}
    for pod in pods:
        node = pod["spec"].get("nodeName") or None
        status = pod.get("status", {})
        devices = []
        for claim_status in status.get("resourceClaimStatuses", []):
            allocation = claims.get(claim_status.get("resourceClaimName", ""), {}).get("status", {}).get("allocation")
            if node is not None and allocation is not None:
                devices += [(r["pool"], r["device"]) for r in allocation["devices"]["results"]]
        out[_target(pod)] = _shape(pod, node, devices, pending_message(pod))
    plane.request("DELETE", daemonsets + "/agent", {"propagationPolicy": "Orphan"})
    plane.request("DELETE", pods_path, {"gracePeriodSeconds": 0})
    for doc in docs:
        if doc["kind"] not in NAMESPACED:
            plane.request("DELETE", _path(doc, doc["metadata"]["name"]))
    return out


def run_kubedra(docs: list[dict[str, Any]]) -> Outcome:
    result = simulate(build_scenario(load_text(yaml.safe_dump_all(docs))))
    state = result.state
    out: Outcome = {}
    for record in state.pods.values():
        pod = to_dict(record.pod)
        node = record.pod.spec.node_name or None
        devices = []
        for claim_status in record.pod.status.resource_claim_statuses:
            claim = state.claims.get(f"{record.pod.metadata.namespace}/{claim_status.resource_claim_name}")
            if node is not None and claim is not None and claim.status.allocation is not None:
                devices += [(r.pool, r.device) for r in claim.status.allocation.devices.results]
        message = record.pending_reason.removeprefix("error: ") if node is None else ""
        pod["metadata"]["generateName"] = record.pod.metadata.name[:-5]  # the controller's GenerateName
        out[_target(pod)] = _shape(pod, node, devices, message)
    return out


@pytest.mark.parametrize("name", sorted(p.stem for p in SCENARIOS.glob("*.yaml")))
def test_kubedra_runs_daemonsets_as_the_real_controller_and_scheduler_do(plane: ControlPlane, name: str) -> None:
    tag = secrets.token_hex(3)
    docs = _docs(SCENARIOS / f"{name}.yaml", f"ds-{tag}", f"s{tag}.{DRIVER}")
    real = run_real(plane, docs, f"ds-{tag}")
    sim = run_kubedra(docs)
    assert sorted(sim) == sorted(real), "nodes given a daemon pod differ"
    for node in sorted(real):
        assert sim[node] == real[node], node
    assert any(p["node"] is None for p in real.values()) and any(p["node"] for p in real.values())


def test_every_kind_a_scenario_creates_is_known() -> None:
    kinds = {d["kind"] for p in SCENARIOS.glob("*.yaml") for d in yaml.safe_load_all(p.read_text())}
    assert kinds <= set(ORDER) and (kinds - NAMESPACED) <= set(PATHS)
