"""Kueue's pod integration in ``kubedra simulate`` (``sim.kueue_pods``), without a control plane: cases derived from
Kueue v0.17's ``pkg/controller/jobs/pod`` (the webhook's gate and validation, a group's Workload, ``Run`` and
``Finished``). ``tests/kueue/test_pods_vs_kueue_controller.py`` runs the real controller manager on such pods."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from tests.sim.test_kueue import QUEUE, QUOTA_8, cluster_queue, flavor, local_queue, nodes, run

from kubedra.cli import main
from kubedra.objects.errors import InvalidInputError
from kubedra.objects.load import load_text
from kubedra.sim.kueue_pods import GATE, GROUP_NAME, GROUP_TOTAL
from kubedra.sim.report import build_report
from kubedra.sim.run import SimulationResult
from kubedra.sim.scenario import build_scenario

POOL = {"pool": "gpu"}


def pod(name: str, gpus: int, *, run_for: str = "1h", start_after: str = "0s", group: str | None = None,
        total: str | None = None, namespace: str = "default", queue: str = "lq") -> dict[str, Any]:
    labels = {QUEUE: queue, **({GROUP_NAME: group} if group else {})}
    annotations = {"kubedra.io/run-for": run_for, "kubedra.io/start-after": start_after,
                   **({GROUP_TOTAL: total} if total is not None else {})}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace, "labels": labels,
                                                            "annotations": annotations},
            "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox", "resources": {
                "requests": {"cpu": "1"}, "limits": {"nvidia.com/gpu": str(gpus)}}}]}}


def queues() -> list[dict[str, Any]]:
    return [flavor("default", POOL), cluster_queue(QUOTA_8), local_queue(), nodes(2, POOL)]


def times(result: SimulationResult, kind: str) -> dict[str, float]:
    """Object name -> when the first event of ``kind`` happened to it."""
    out: dict[str, float] = {}
    for e in result.events:
        if e.type == kind:
            out.setdefault(e.object.rsplit("/", 1)[1], e.time)
    return out


def test_a_queued_pod_is_gated_until_admitted_and_its_quota_is_freed_when_it_ends() -> None:
    """8 GPUs of quota: ``a`` (6) is admitted at once, ``b`` (4) only once ``a`` has finished, an hour on; each is
    made gated by Kueue's webhook and ungated, with the flavor's node labels, on admission."""
    result = run(*queues(), pod("a", 6), pod("b", 4))
    assert times(result, "SchedulingGated") == {"a": 0.0, "b": 0.0}
    assert times(result, "Admitted") == {"a": 0.0, "b": 3600.0}
    assert times(result, "Scheduled") == {"a": 0.0, "b": 3600.0}
    assert times(result, "QuotaReleased") == {"a": 3600.0, "b": 7200.0}
    for record in result.state.pods.values():
        assert record.pod.spec.node_selector == POOL and not record.pod.spec.scheduling_gates
    kueue = build_report(result).summary["kueueAdmission"]
    assert (kueue["queued"], kueue["admitted"], kueue["max"], kueue["longest"]) == (2, 2, "1h", "Pod default/b")


def test_a_pod_group_is_one_workload_made_with_its_last_pod_and_admitted_whole() -> None:
    """``grp`` (2 x 4 GPUs) gets its Workload when its second pod arrives (a minute in) and waits for ``a`` (6 GPUs)
    and ``c`` (2, admitted behind it: BestEffortFIFO) to end: neither of its pods runs before; then both are ungated
    together. Its quota is free once both succeeded."""
    result = run(*queues(), pod("a", 6), pod("g1", 4, group="grp", total="2", start_after="30s"),
                 pod("g2", 4, group="grp", total="2", start_after="1m", run_for="2h"), pod("c", 2, start_after="2m"))
    assert times(result, "Queued") == {"a": 0.0, "grp": 60.0, "c": 120.0}
    assert times(result, "Admitted") == {"a": 0.0, "c": 120.0, "grp": 3720.0}
    assert times(result, "Ungated") == {"a": 0.0, "c": 120.0, "g1": 3720.0, "g2": 3720.0}
    assert times(result, "QuotaReleased")["grp"] == 3720.0 + 7200.0  # its longer pod's end
    (why,) = [e.message for e in result.events if e.type == "Inadmissible" and e.object == "Workload default/grp"]
    assert "insufficient unused quota for nvidia.com/gpu in flavor default, 6 more needed" in why


def test_a_group_short_of_its_total_count_has_no_workload_and_stays_gated() -> None:
    docs = [*queues(), pod("g1", 1, group="grp", total="3"), pod("g2", 1, group="grp", total="3")]
    scenario = build_scenario(load_text(yaml.safe_dump_all(docs)))
    assert any("Kueue pod group default/grp has fewer runnable pods than expected (2 of 3)" in n
               for n in scenario.notes)
    result = run(*docs)
    assert times(result, "Queued") == {} and times(result, "Scheduled") == {}
    assert all(g.name == GATE for r in result.state.pods.values() for g in r.pod.spec.scheduling_gates)


def test_a_pod_in_an_unmanaged_namespace_or_without_the_label_is_not_gated() -> None:
    free = pod("free", 1)
    del free["metadata"]["labels"][QUEUE]
    result = run(*queues(), pod("system", 8, namespace="kube-system"), free)
    assert times(result, "Scheduled") == {"system": 0.0, "free": 0.0}
    assert times(result, "Queued") == {}


@pytest.mark.parametrize(("change", "field", "message"), [
    (lambda p: p["metadata"]["annotations"].pop(GROUP_TOTAL), f"metadata.annotations[{GROUP_TOTAL}]",
     "Required value: both"),
    (lambda p: p["metadata"]["labels"].pop(GROUP_NAME), f"metadata.labels[{GROUP_NAME}]", "Required value: both"),
    (lambda p: p["metadata"]["annotations"].update({GROUP_TOTAL: "0"}), f"metadata.annotations[{GROUP_TOTAL}]",
     'Invalid value: "0"'),
    (lambda p: p["metadata"]["annotations"].update({GROUP_TOTAL: "two"}), f"metadata.annotations[{GROUP_TOTAL}]",
     'Invalid value: "two": strconv.Atoi: parsing "two": invalid syntax'),
    (lambda p: p["metadata"].update(labels={"kueue.x-k8s.io/managed": "yes"}, annotations={}),
     "metadata.labels[kueue.x-k8s.io/managed]", "Forbidden"),  # naming no queue (a queued pod's is set to true)
])
def test_what_kueues_pod_webhook_refuses_is_a_problem_naming_file_object_and_field(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], change: Any, field: str, message: str) -> None:
    bad = pod("bad", 1, group="grp", total="1")
    change(bad)
    path = tmp_path / "pods.yaml"
    path.write_text(yaml.safe_dump_all([*queues(), bad]))
    with pytest.raises(InvalidInputError) as raised:
        build_scenario(load_text(yaml.safe_dump_all([*queues(), bad])))
    (problem,) = raised.value.problems
    assert (problem.location.object, problem.location.field) == ("Pod/bad", field)
    assert problem.message.startswith(message)
    assert main(["simulate", "-q", "-f", str(path)]) == 2
    assert f"{path}[4]: Pod/bad: {field}: {message}" in capsys.readouterr().err


def test_a_group_pod_that_succeeds_frees_its_share_of_the_quota_at_once() -> None:
    """Kueue's ``ReclaimablePods``: ``g1`` of the group (2 x 4) succeeds after an hour and its 4 GPUs go to ``s``
    while ``g2`` still runs; a serving group's never do."""
    members = [pod("g1", 4, group="grp", total="2"), pod("g2", 4, group="grp", total="2", run_for="10h")]
    result = run(*queues(), *members, pod("s", 4, start_after="1m"))
    assert times(result, "Admitted") == {"grp": 0.0, "s": 3600.0}
    for member in members:
        member["metadata"]["annotations"]["kueue.x-k8s.io/pod-group-serving"] = "true"
    assert times(run(*queues(), *members, pod("s", 4, start_after="1m")), "Admitted") == {"grp": 0.0}


def test_the_example_holds_the_training_group_until_the_notebook_ends() -> None:
    """``examples/workloads/kueue-pods.yaml`` does what its header says."""
    example = Path(__file__).resolve().parents[2] / "examples" / "workloads" / "kueue-pods.yaml"
    assert "examples/workloads/kueue-pods.yaml" in example.read_text().splitlines()[0]
    result = run(*yaml.safe_load_all(example.read_text()))
    assert times(result, "SchedulingGated") == {"notebook": 0.0, "train-0": 60.0, "train-1": 120.0}
    assert times(result, "Admitted") == {"notebook": 0.0, "train": 3600.0}
    assert times(result, "Scheduled") == {"notebook": 0.0, "train-0": 3600.0, "train-1": 3600.0}
    assert result.state.pods["default/train-1"].pod.spec.node_selector == {"cloud.example.com/gpu": "h100"}
    wait = build_report(result).summary["kueueAdmission"]
    assert (wait["queued"], wait["admitted"], wait["max"], wait["longest"]) == (2, 2, "58m", "Workload default/train")
    assert main(["simulate", "-q", "-f", str(example)]) == 0
