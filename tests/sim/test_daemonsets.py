"""DaemonSets as v1.37.2's DaemonSet controller runs them (issue 37 item 4: a DaemonSet on a 2-node pool simulated as
"0 pending of 0"): one pod per eligible node, eligibility by nodeSelector, required node affinity and taints with the
controller's automatic tolerations, each pod pinned by ``matchFields metadata.name`` and scheduled like any pod."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from fixtures.scenarios import nodepool, pod_spec, run, text_of

from kubedra.cli import main
from kubedra.objects.model import (
    Affinity,
    Node,
    NodeAffinity,
    NodeSelector,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    ObjectMeta,
    Pod,
    PodSpec,
    Toleration,
)
from kubedra.scheduler.nodefit import pinned_nodes
from kubedra.sim.daemonsets import DAEMON_TOLERATIONS, daemon_specs, daemon_tolerations

NAME = re.compile(r"dcgm-[bcdfghjklmnpqrstvwxz2456789]{5}")
DEFAULT_TOLERATIONS = [
    {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"},
    {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute"},
    {"key": "node.kubernetes.io/disk-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/memory-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/pid-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"},
]


def daemonset(name: str = "dcgm", **spec: Any) -> dict[str, Any]:
    labels = {"app": name}
    template = {"metadata": {"labels": labels}, "spec": pod_spec(limits={"nvidia.com/gpu": "1"}, **spec)}
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": name, "namespace": "monitoring"},
        "spec": {"selector": {"matchLabels": dict(labels)}, "template": template},
    }


def daemon_pods(*documents: dict[str, Any]) -> dict[str, dict[str, Any]]:
    done = run(*documents)
    return {name: p for name, p in done.pods.items() if name.startswith("dcgm-")}


def test_one_pod_per_node_pinned_to_it_owned_and_named_as_the_controller_does_with_its_gpu() -> None:
    done = run(nodepool("gpu", count=2), daemonset())
    pods = done.pods
    assert sorted(p["spec"]["nodeName"] for p in pods.values()) == ["gpu-0", "gpu-1"]
    for name, pod in pods.items():
        assert NAME.fullmatch(name), name
        node = pod["spec"]["nodeName"]
        assert pod["metadata"]["namespace"] == "monitoring"
        assert pod["spec"]["affinity"] == {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}]}}}
        (owner,) = pod["metadata"]["ownerReferences"]
        assert (owner["apiVersion"], owner["kind"], owner["name"]) == ("apps/v1", "DaemonSet", "dcgm")
        assert owner["controller"] and owner["blockOwnerDeletion"]
        labels = pod["metadata"]["labels"]
        assert labels["app"] == "dcgm" and labels["pod-template-generation"] == "1"
        assert labels["controller-revision-hash"]
        assert pod["spec"]["tolerations"] == DEFAULT_TOLERATIONS
        assert pod["status"]["phase"] == "Running"
    assert done.summary["pods"]["total"] == 2 and done.summary["pods"]["running"] == 2
    assert done.summary["gpus"]["inUse"] == 2 and done.summary["claims"]["allocated"] == 2


def test_a_tainted_node_without_a_toleration_gets_no_pod_and_one_with_it_does() -> None:
    taint = {"key": "dedicated", "value": "training", "effect": "NoSchedule"}
    pods = daemon_pods(nodepool("plain"), nodepool("tainted", taints=[taint]), daemonset())
    assert [p["spec"]["nodeName"] for p in pods.values()] == ["plain-0"]
    tolerate = [{"key": "dedicated", "operator": "Equal", "value": "training", "effect": "NoSchedule"}]
    pods = daemon_pods(nodepool("plain"), nodepool("tainted", taints=[taint]), daemonset(tolerations=tolerate))
    assert sorted(p["spec"]["nodeName"] for p in pods.values()) == ["plain-0", "tainted-0"]
    assert next(iter(pods.values()))["spec"]["tolerations"][0] == tolerate[0]


def test_the_automatic_tolerations_let_pods_onto_cordoned_and_pressured_nodes_but_not_past_other_no_execute() -> None:
    pressure = {"key": "node.kubernetes.io/memory-pressure", "effect": "NoSchedule"}
    unschedulable = {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}
    evicting = {"key": "maintenance", "effect": "NoExecute"}
    network = {"key": "node.kubernetes.io/network-unavailable", "effect": "NoSchedule"}
    pools = (nodepool("pressure", taints=[pressure]), nodepool("cordoned", taints=[unschedulable]),
             nodepool("evicting", taints=[evicting]), nodepool("network", taints=[network]))
    pods = daemon_pods(*pools, daemonset())
    assert sorted(p["spec"]["nodeName"] for p in pods.values()) == ["cordoned-0", "pressure-0"]
    # Only hostNetwork pods get the network-unavailable toleration.
    pods = daemon_pods(*pools, daemonset(hostNetwork=True))
    assert sorted(p["spec"]["nodeName"] for p in pods.values()) == ["cordoned-0", "network-0", "pressure-0"]


def test_node_selector_and_required_affinity_choose_the_nodes() -> None:
    pools = (nodepool("a100", labels={"gpu": "a100"}), nodepool("l4", labels={"gpu": "l4"}),
             nodepool("none", gpus=None, labels={"gpu": "none"}))
    pods = daemon_pods(*pools, daemonset(nodeSelector={"gpu": "a100"}))
    assert [p["spec"]["nodeName"] for p in pods.values()] == ["a100-0"]
    affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "gpu", "operator": "In", "values": ["a100", "l4"]}]}]}}}
    pods = daemon_pods(*pools, daemonset(affinity=affinity))
    assert sorted(p["spec"]["nodeName"] for p in pods.values()) == ["a100-0", "l4-0"]
    # The controller replaces the required affinity with the node's name; the nodeSelector stays.
    for pod in pods.values():
        terms = pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
        assert terms["nodeSelectorTerms"][0]["matchFields"][0]["values"] == [pod["spec"]["nodeName"]]


def test_a_pod_that_does_not_fit_its_node_stays_pending_there() -> None:
    """The controller decides by node, not by room: a node without a free GPU keeps its daemon pod pending."""
    done = run(nodepool("gpu", count=2), nodepool("cpu", gpus=None), daemonset())
    pods = {p["spec"].get("nodeName") or p["spec"]["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"][0]["matchFields"][0]["values"][0]: name
        for name, p in done.pods.items()}
    assert sorted(pods) == ["cpu-0", "gpu-0", "gpu-1"]
    assert done.phase(pods["cpu-0"]) == "Pending"
    # NodeAffinity's PreFilter keeps only the pinned node; kube-scheduler names the others so (its words, compared
    # in tests/kube/test_daemonsets_vs_kube_controllers.py).
    assert done.pending_reason(pods["cpu-0"]) == (
        "0/3 nodes are available: 1 cannot allocate all claims, 2 node(s) didn't satisfy plugin(s) [NodeAffinity]. "
        "preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling.")
    assert done.summary["pods"]["pending"] == 1 and done.summary["pods"]["running"] == 2


# --------------------------------------------------------------------------------------------------- validate


def _validate(tmp_path: Path, capsys: pytest.CaptureFixture[str], document: dict[str, Any]) -> tuple[int, str]:
    path = tmp_path / "ds.yaml"
    path.write_text(text_of(nodepool("gpu", count=2), document))
    code = main(["validate", "-f", str(path)])
    captured = capsys.readouterr()
    return code, captured.out + captured.err


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (lambda d: d["metadata"].update(name="DCGM_exporter"),
         "ds.yaml[1]: DaemonSet/DCGM_exporter: metadata.name: Invalid value: \"DCGM_exporter\""),
        (lambda d: d["spec"]["selector"]["matchLabels"].update(app="other"),
         "ds.yaml[1]: DaemonSet/dcgm: spec.template.metadata.labels: Invalid value: `selector` does not match "
         "template `labels`"),
        (lambda d: d["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"].update({
            "nvidia.com/gpu": "0.5"}),
         "ds.yaml[1]: DaemonSet/dcgm: spec.template.spec.containers[0].resources.limits[nvidia.com/gpu]: Invalid "
         "value: \"0.5\": must be an integer"),
        (lambda d: d["spec"]["template"]["spec"].update(restartPolicy="Never"),
         "ds.yaml[1]: DaemonSet/dcgm: spec.template.spec.restartPolicy: Unsupported value: \"Never\": supported "
         "values: \"Always\""),
        (lambda d: d["spec"].update(selector={}),
         "ds.yaml[1]: DaemonSet/dcgm: spec.selector: Invalid value: empty selector is invalid for daemonset"),
    ],
)
def test_validate_refuses_what_the_api_server_refuses_naming_file_object_and_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], change: Callable[[dict[str, Any]], None], expected: str
) -> None:
    document = daemonset()
    change(document)
    code, output = _validate(tmp_path, capsys, document)
    assert code == 1, output
    assert expected in output


def test_validate_checks_a_good_daemonset_and_simulate_no_longer_ignores_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, output = _validate(tmp_path, capsys, daemonset())
    assert code == 0 and "passed through unchecked" not in output, output
    path = tmp_path / "ds.yaml"
    assert main(["simulate", "-f", str(path)]) == 0
    captured = capsys.readouterr()
    assert "0 pending of 2" in captured.out and "not simulated" not in captured.err + captured.out
    assert main(["explain", "ds/dcgm", "-f", str(path)]) == 0
    assert "Kind:         DaemonSet\nPods:         2 pods: 2 Running\n" in capsys.readouterr().out


# --------------------------------------------------------------------------------------------------- unit


def test_a_template_toleration_equal_to_a_default_is_replaced_in_place_and_others_are_kept() -> None:
    """``AddOrUpdateTolerationInPodSpec``: same key, effect, operator and value is replaced (tolerationSeconds
    dropped) where it stands; the defaults follow in the controller's order."""
    own = Toleration(key="node.kubernetes.io/unreachable", operator="Exists", effect="NoExecute", toleration_seconds=30)
    gpu = Toleration(key="nvidia.com/gpu", operator="Exists", effect="NoSchedule")
    got = daemon_tolerations(PodSpec(tolerations=[own, gpu]), host_network=False)
    assert got[0] == Toleration(key="node.kubernetes.io/unreachable", operator="Exists", effect="NoExecute")
    assert got[1] == gpu
    assert [t.key for t in got[2:]] == [t.key for t in DAEMON_TOLERATIONS if t.key != own.key]


def test_a_template_node_name_limits_the_daemonset_to_that_node() -> None:
    nodes = [Node(metadata=ObjectMeta(name=n)) for n in ("a", "b")]
    assert [n for n, _ in daemon_specs(PodSpec(node_name="b"), False, nodes)] == ["b"]
    assert [n for n, _ in daemon_specs(PodSpec(), False, nodes)] == ["a", "b"]


def _pod_pinned(*terms: list[tuple[str, str, list[str]]]) -> Pod:
    selector = NodeSelector(node_selector_terms=[
        NodeSelectorTerm(match_fields=[NodeSelectorRequirement(key=k, operator=o, values=v) for k, o, v in term])
        for term in terms])
    affinity = Affinity(node_affinity=NodeAffinity(required_during_scheduling_ignored_during_execution=selector))
    return Pod(spec=PodSpec(affinity=affinity))


def test_node_affinity_prefilter_keeps_the_named_nodes_as_upstream_intersects_and_unites_them() -> None:
    name = "metadata.name"
    assert pinned_nodes(_pod_pinned([(name, "In", ["a"])])) == {"a"}
    assert pinned_nodes(_pod_pinned([(name, "In", ["a", "b"]), (name, "In", ["b", "c"])])) == {"b"}
    assert pinned_nodes(_pod_pinned([(name, "In", ["a"])], [(name, "In", ["c"])])) == {"a", "c"}
    assert pinned_nodes(_pod_pinned([(name, "In", ["a"])], [(name, "NotIn", ["c"])])) is None  # a term without
    assert pinned_nodes(Pod()) is None


def test_explain_says_the_other_nodes_are_left_out_by_the_pin(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "ds.yaml"
    path.write_text(text_of(nodepool("gpu", count=2), nodepool("cpu", gpus=None), daemonset()))
    assert main(["simulate", "-f", str(path), "-o", "json"]) == 0
    items = json.loads(capsys.readouterr().out)["items"]
    (pending,) = [p["metadata"]["name"] for p in items if p["kind"] == "Pod" and p["status"]["phase"] == "Pending"]
    assert main(["explain", "pod", f"monitoring/{pending}", "-f", str(path)]) == 0
    out = capsys.readouterr().out
    assert "2 nodes (gpu-0, gpu-1): node(s) didn't satisfy plugin(s) [NodeAffinity]: the pod is pinned to cpu-0" in out
