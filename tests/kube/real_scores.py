"""Score expectations from the real kube-scheduler: small clusters whose last pod the test control plane's scheduler
scores at ``-v=10``, where v1.37.2's ``prioritizeNodes`` logs each score plugin's weighted, normalised score per node
and each node's total.

Each case is a few Nodes, pods already bound to them (``spec.nodeName`` at creation: the scheduler's cache counts
them, nothing schedules them), the owners those pods name, and one pod to schedule, ``target``. ``record`` runs every
case and returns what the scheduler logged; ``python -m tests.kube.real_scores`` writes it to ``EXPECTED``, which
``tests/scheduler/test_kube_scoring.py`` holds kubedra's scorer to without a control plane, and
``tests/kube/test_real_scores.py`` holds to a fresh run of the real scheduler.
"""

from __future__ import annotations

import secrets
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from tests.controlplane.fixture import ControlPlane, running_control_plane
from tests.kube.vs_kube_scheduler import SCORE_VERBOSITY, log_offset, logged_scores, prepare, run_real

EXPECTED = Path(__file__).resolve().parents[1] / "scheduler" / "kube_scores.yaml"
TARGET = "target"
IMAGE = "registry.k8s.io/pause:3.10"
ZONE = "topology.kubernetes.io/zone"

Scores = dict[str, dict[str, int]]  # node -> plugin (weighted, as logged) and "total"


@dataclass(frozen=True)
class Case:
    name: str
    why: str
    docs: list[dict[str, Any]]


def node(name: str, cpu: str = "4", memory: str = "8Gi", labels: Mapping[str, str] | None = None,
         taints: Sequence[Mapping[str, str]] = ()) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}},
            "spec": {"taints": [dict(t) for t in taints]} if taints else {},
            "status": {"allocatable": {"cpu": cpu, "memory": memory, "pods": "110"}}}


def pod(name: str, requests: Mapping[str, str] | None = None, *, on: str | None = None,
        labels: Mapping[str, str] | None = None, owner: tuple[str, str] | None = None,
        **spec: Any) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "c", "image": IMAGE, "resources": {"requests": dict(requests)} if requests
                                 else {}}
    body: dict[str, Any] = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": dict(labels or {})},
                            "spec": {"containers": [container], **spec}}
    if on is not None:
        body["spec"]["nodeName"] = on
    if owner is not None:
        api = "apps/v1"
        body["metadata"]["ownerReferences"] = [{"apiVersion": api, "kind": owner[0], "name": owner[1],
                                                "controller": True, "uid": ""}]
    return body


def owner(kind: str, name: str, labels: Mapping[str, str]) -> dict[str, Any]:
    spec: dict[str, Any] = {"replicas": 0, "selector": {"matchLabels": dict(labels)},
                            "template": {"metadata": {"labels": dict(labels)},
                                         "spec": {"containers": [{"name": "c", "image": IMAGE}]}}}
    if kind == "StatefulSet":
        spec["serviceName"] = name
    return {"apiVersion": "apps/v1", "kind": kind, "metadata": {"name": name}, "spec": spec}


WEB = {"app": "web"}
DB = {"app": "db"}
PREFER = "PreferNoSchedule"

CASES = [
    Case("fit-and-balance", "NodeResourcesFit (LeastAllocated) and BalancedAllocation on a half-used and an empty node",
         [node("a"), node("b"), pod("used", {"cpu": "2", "memory": "0"}, on="a"),
          pod(TARGET, {"cpu": "1", "memory": "1Gi"})]),
    Case("more-balanced", "a pod that evens out cpu and memory on one node and unbalances the other",
         [node("a"), node("b"), pod("cpu-heavy", {"cpu": "3", "memory": "2Gi"}, on="a"),
          pod("mem-heavy", {"cpu": "1", "memory": "6Gi"}, on="b"), pod(TARGET, {"cpu": "0", "memory": "2Gi"})]),
    Case("light-pods", "requests left out count as 100m and 200Mi; nodes of three sizes",
         [node("small", "2", "4Gi"), node("mid", "16", "64Gi"), node("big", "96", "1024Gi"),
          pod("light", on="small"), pod(TARGET)]),
    Case("init-and-sidecar", "an init container's peak and a restartable sidecar in the requests scored",
         [node("a", "8", "16Gi"), node("b", "16", "32Gi"), pod("used", {"cpu": "4", "memory": "4Gi"}, on="b"),
          pod(TARGET, {"cpu": "500m", "memory": "1Gi"},
              initContainers=[{"name": "side", "image": IMAGE, "restartPolicy": "Always",
                               "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}},
                              {"name": "init", "image": IMAGE,
                               "resources": {"requests": {"cpu": "3", "memory": "2Gi"}}}])]),
    Case("replicaset-hostname-spread", "PodTopologySpread's system default on hostname: the ReplicaSet's pods per node",
         [owner("ReplicaSet", "web", WEB), node("a"), node("b"), node("c"),
          pod("w0", on="a", labels=WEB, owner=("ReplicaSet", "web")),
          pod("w1", on="a", labels=WEB, owner=("ReplicaSet", "web")),
          pod("w2", on="c", labels=WEB, owner=("ReplicaSet", "web")), pod("other", on="b"),
          pod(TARGET, labels=WEB, owner=("ReplicaSet", "web"))]),
    Case("statefulset-zone-spread", "the system default's zone constraint too, with a tainted node not feasible",
         [owner("StatefulSet", "db", DB), node("a", labels={ZONE: "z1"}),
          node("b", labels={ZONE: "z1"}, taints=[{"key": "x", "value": "1", "effect": "NoSchedule"}]),
          node("c", labels={ZONE: "z2"}), node("d", labels={ZONE: "z2"}),
          pod("db-0", on="a", labels=DB, owner=("StatefulSet", "db")),
          pod("db-1", on="b", labels=DB, owner=("StatefulSet", "db")),
          pod("db-2", on="c", labels=DB, owner=("StatefulSet", "db")),
          pod("db-3", on="a", labels=DB, owner=("StatefulSet", "db")),
          pod(TARGET, labels=DB, owner=("StatefulSet", "db"))]),
    Case("prefer-no-schedule", "TaintToleration: PreferNoSchedule taints not tolerated, normalised in reverse",
         [node("none"), node("one", taints=[{"key": "a", "value": "1", "effect": PREFER}]),
          node("two", taints=[{"key": "a", "value": "1", "effect": PREFER},
                              {"key": "b", "value": "1", "effect": PREFER}]),
          node("three", taints=[{"key": "a", "value": "1", "effect": PREFER}, {"key": "b", "value": "1", "effect": PREFER},
                                {"key": "c", "value": "1", "effect": PREFER}]),
          pod(TARGET, {"cpu": "1"}, tolerations=[{"key": "b", "operator": "Exists", "effect": "NoSchedule"},
                                                 {"key": "c", "operator": "Exists"}])]),
    Case("preferred-affinity", "NodeAffinity: the weights of the preferred terms each node matches, normalised",
         [node("h100-z", labels={"gpu": "h100", "zone": "x"}), node("z", labels={"zone": "x"}), node("bare"),
          node("a100", labels={"gpu": "a100"}),
          pod(TARGET, {"cpu": "1"}, affinity={"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
              {"weight": 10, "preference": {"matchExpressions": [{"key": "gpu", "operator": "In",
                                                                  "values": ["h100"]}]}},
              {"weight": 3, "preference": {"matchExpressions": [{"key": "zone", "operator": "Exists"}]}},
              {"weight": 7, "preference": {"matchExpressions": [{"key": "gpu", "operator": "NotIn",
                                                                 "values": ["h100"]}]}},
          ]}})]),
]


def record_case(plane: ControlPlane, case: Case) -> Scores:
    """The real scheduler's logged scores for the case's target, per feasible node."""
    tag = secrets.token_hex(3)
    namespace = f"scores-{tag}"
    docs = prepare(case.docs, namespace, "unused.example.com")
    offset = log_offset(plane)
    placed = run_real(plane, docs, namespace, verbosity=SCORE_VERBOSITY)
    if placed[TARGET].node is None:
        raise AssertionError(f"{case.name}: the target stayed pending")
    scores = logged_scores(plane, offset, namespace).get(TARGET)
    if not scores:
        raise AssertionError(f"{case.name}: kube-scheduler logged no scores for the target (one feasible node?)")
    return {n: dict(sorted(s.items())) for n, s in sorted(scores.items())}


def record(plane: ControlPlane) -> dict[str, Scores]:
    return {case.name: record_case(plane, case) for case in CASES}


def load_expected() -> dict[str, Scores]:
    loaded: dict[str, Scores] = yaml.safe_load(EXPECTED.read_text())["cases"]
    return loaded


def render(recorded: Mapping[str, Scores]) -> str:
    header = ("# Written by `python -m tests.kube.real_scores` from kube-scheduler v1.37.2's -v=10 score log (the test\n"
              "# control plane's): per case (tests/kube/real_scores.py), per feasible node, each score plugin's\n"
              "# weighted score and the total. tests/kube/test_real_scores.py fails when a fresh run differs.\n")
    return header + yaml.safe_dump({"cases": {name: recorded[name] for name in sorted(recorded)}}, sort_keys=False)


def main(argv: Sequence[str]) -> int:
    with running_control_plane(only=("etcd", "kube-apiserver", "kube-scheduler")) as plane:
        EXPECTED.write_text(render(record(plane)))
    print(f"wrote {EXPECTED}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
