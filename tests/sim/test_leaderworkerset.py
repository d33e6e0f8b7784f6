"""LeaderWorkerSet (``leaderworkerset.x-k8s.io/v1``, ``kubedra.sim.leaderworkersets``) as its controllers expand it,
read from ``-o json`` as a user reads it: groups of a leader and workers with GPUs from DRA claims, their names,
labels and claims; LeaderReady startup in simulated time; exclusive placement by topology; the webhook's checks."""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import shlex
from pathlib import Path
from typing import Any

import pytest
from fixtures.scenarios import claim_template, nodepool, pod, pod_spec, run, text_of

from kubedra.cli import main
from kubedra.objects.errors import InvalidInputError
from kubedra.objects.load import load_text
from kubedra.sim.scenario import build_scenario

GPUS8 = {"nvidia.com/gpu": "8"}
PREFIX = "leaderworkerset.sigs.k8s.io/"


def template(run_for: str | None = None, **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"spec": pod_spec(**spec) if spec else pod_spec(requests=GPUS8, limits=GPUS8)}
    if run_for:
        body["metadata"] = {"annotations": {"kubedra.io/run-for": run_for}}
    return body


def lws(name: str = "vllm", replicas: int = 2, size: int = 2, *, annotations: dict[str, str] | None = None,
        worker: dict[str, Any] | None = None, leader: dict[str, Any] | None = None, **spec: Any) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name}
    if annotations:
        metadata["annotations"] = annotations
    lwt: dict[str, Any] = {"size": size, "workerTemplate": worker or template()}
    if leader is not None:
        lwt["leaderTemplate"] = leader
    return {"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet", "metadata": metadata,
            "spec": {"replicas": replicas, "leaderWorkerTemplate": lwt, **spec}}


def pool(count: int = 4, **kwargs: Any) -> dict[str, Any]:
    return nodepool("h100", count, gpus=8, model="H100-80GB", device_plugin=True, **kwargs)


def test_groups_become_leaders_and_workers_named_and_labelled_as_the_controllers_make_them() -> None:
    sim = run(pool(6), lws(size=3))
    assert sorted(sim.pods) == ["vllm-0", "vllm-0-1", "vllm-0-2", "vllm-1", "vllm-1-1", "vllm-1-2"]
    leader = sim.pods["vllm-1"]["metadata"]
    key = hashlib.sha1(b"default/vllm-1").hexdigest()
    assert {k: v for k, v in leader["labels"].items() if k.startswith(PREFIX) and "revision" not in k} == {
        PREFIX + "name": "vllm", PREFIX + "group-index": "1", PREFIX + "worker-index": "0", PREFIX + "group-key": key}
    assert leader["annotations"][PREFIX + "size"] == "3"
    assert leader["ownerReferences"][0]["kind"] == "StatefulSet" and leader["ownerReferences"][0]["name"] == "vllm"
    worker = sim.pods["vllm-1-2"]["metadata"]
    assert worker["labels"][PREFIX + "worker-index"] == "2"
    assert worker["labels"][PREFIX + "group-key"] == key
    assert worker["labels"]["apps.kubernetes.io/pod-index"] == "2"
    assert worker["annotations"][PREFIX + "leader-name"] == "vllm-1"
    assert worker["ownerReferences"][0]["name"] == "vllm-1"  # the group's worker StatefulSet
    assert {sim.phase(n) for n in sim.pods} == {"Running"}
    assert len({sim.node_of(n) for n in sim.pods}) == 6  # 8 GPUs each: a node per pod


def test_leader_template_and_claims_per_pod() -> None:
    leader = template(containers=[{"name": "api", "image": "vllm"}], template="one-gpu")
    worker = template(template="eight-gpus")
    sim = run(nodepool("dra", 4, gpus=8, model="H100-80GB"), claim_template("one-gpu"),
              claim_template("eight-gpus", count=8), lws(replicas=2, size=2, leader=leader, worker=worker))
    assert len(sim.pods) == 4
    claims = sim.claims
    assert len(claims) == 4  # one claim per pod from its template
    assert sorted(len(sim.allocated_devices(c)) for c in claims) == [1, 1, 8, 8]


def test_leader_ready_makes_workers_once_the_leader_runs() -> None:
    # One 8-GPU node held for 5 minutes: the leader runs only then, and only then is its worker StatefulSet made
    # (its worker then waits for GPUs the leader holds). LeaderCreated makes the worker with the leader, at 0.
    blocker = pod("blocker", run_for="5m", requests=GPUS8, limits=GPUS8)
    waited = run(pool(1), blocker, lws(replicas=1, size=2, startupPolicy="LeaderReady"))
    assert waited.times("Pod", "Scheduled") == {"blocker": 0.0, "vllm-0": 300.0}
    assert waited.times("StatefulSet", "Created") == {"vllm-0": 300.0}
    assert waited.timeline("Pod vllm-0-1") == [(300.0, "Pending")]
    created_with = run(pool(1), blocker, lws(replicas=1, size=2))
    assert created_with.times("StatefulSet", "Created") == {}
    assert created_with.timeline("Pod vllm-0-1")[0] == (0.0, "Pending")
    roomy = run(pool(3), lws(replicas=1, size=3, startupPolicy="LeaderReady"))
    assert roomy.times("StatefulSet", "Created") == {"vllm-0": 0.0}
    assert set(roomy.times("Pod", "Scheduled").values()) == {0.0}  # made and placed in the same instant


def racks(count: int, nodes: int = 2) -> list[dict[str, Any]]:
    return [nodepool(f"rack{i}", nodes, gpus=8, model="H100-80GB", device_plugin=True, labels={"rack": f"r{i}"})
            for i in range(count)]


def test_exclusive_topology_gives_each_group_its_own_rack_and_the_extra_group_waits() -> None:
    sim = run(*racks(3, 3), lws(replicas=4, size=2, annotations={PREFIX + "exclusive-topology": "rack"}))
    placed = {}
    for group in range(3):
        pods = [f"vllm-{group}", f"vllm-{group}-1"]
        placed[group] = {sim.node_of(p).rsplit("-", 1)[0] for p in pods if sim.phase(p) == "Running"}
    assert sorted(len(v) for v in placed.values()) == [1, 1, 1]
    assert len(set.union(*placed.values())) == 3
    pending = [n for n in sim.pods if sim.phase(n) == "Pending"]
    assert pending == ["vllm-3"]  # its workers are never made
    assert "vllm-3-1" not in sim.pods
    # tried when only the leaders were placed (a worker binding is no hint that it may fit now): the leaders' nodes
    # are full, the other six are in a rack another group holds
    assert sim.pending_reason("vllm-3").startswith(
        "0/9 nodes are available: 3 Insufficient nvidia.com/gpu, 6 node(s) didn't match pod anti-affinity rules.")
    worker = sim.pods["vllm-0-1"]["spec"]
    assert set(worker["nodeSelector"]) == {"rack"}


def test_webhook_problems_name_the_field() -> None:
    # The published CRD's schema refuses these first (the API server validates it before any webhook is called).
    bad = lws("vllm", replicas=-1, startupPolicy="Whenever")
    with pytest.raises(InvalidInputError) as caught:
        load_text(text_of(pool(), bad), source="lws.yaml")
    text = str(caught.value)
    assert 'spec.startupPolicy: Unsupported value: "Whenever"' in text
    # v0.9.0's CRD has no bounds on replicas (the dev commit's Minimum/Maximum came later): its webhook refuses -1
    assert "spec.replicas" not in text
    with pytest.raises(InvalidInputError) as caught:
        build_scenario(load_text(text_of(pool(), lws("vllm", replicas=-1)), source="lws.yaml"))
    assert "spec.replicas: Invalid value: -1: replicas must be equal or greater than 0" in str(caught.value)
    assert "lws.yaml" in text and "LeaderWorkerSet/" in text
    with pytest.raises(InvalidInputError) as caught:  # what only the webhook checks
        build_scenario(load_text(text_of(pool(), lws("Bad_Name", size=0)), source="lws.yaml"))
    text = str(caught.value)
    assert "spec.leaderWorkerTemplate.size: Invalid value: 0: size must be equal or greater than 1" in text
    assert "LeaderWorkerSet/Bad_Name: metadata.name" in text


def test_unknown_field_and_simulate_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "lws.yaml"
    doc = lws()
    doc["spec"]["leaderWorkerTemplate"]["workers"] = 3
    path.write_text(text_of(pool(), doc))
    assert main(["simulate", "-f", str(path)]) == 2
    err = capsys.readouterr().err
    assert "lws.yaml" in err and "LeaderWorkerSet" in err and "workers" in err, err
    path.write_text(text_of(pool(), lws(startupPolicy="Sometime")))
    assert main(["simulate", "-f", str(path)]) == 2
    assert 'LeaderWorkerSet/vllm: spec.startupPolicy: Unsupported value: "Sometime"' in capsys.readouterr().err
    assert main(["validate", "-f", str(path), "-o", "table"]) != 0
    out = capsys.readouterr()
    assert "spec.startupPolicy" in out.out + out.err


EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "workloads" / "vllm-lws.yaml"


def test_the_vllm_example_does_what_its_header_says() -> None:
    command = EXAMPLE.read_text().splitlines()[0].removeprefix("# ")
    argv = shlex.split(command)
    out, err = io.StringIO(), io.StringIO()
    with contextlib.chdir(EXAMPLE.parents[2]), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        assert main([*argv[1:], "-o", "json"]) == 0
    assert "Note" not in err.getvalue(), err.getvalue()
    report: dict[str, Any] = json.loads(out.getvalue())
    scheduled = {e["object"].rsplit("/", 1)[1]: (e["seconds"], e["node"]) for e in report["events"]
                 if e["type"] == "Scheduled" and e["object"].startswith("Pod inference/vllm")}
    assert len(scheduled) == 8
    for group in range(4):
        leader, worker = scheduled[f"vllm-{group}"], scheduled[f"vllm-{group}-1"]
        assert leader[1].rsplit("-", 1)[0] == worker[1].rsplit("-", 1)[0]  # the group's own rack
        assert leader[0] == worker[0] == (60.0 if group < 3 else 1860.0)
    assert len({node.rsplit("-", 1)[0] for _, node in scheduled.values()}) == 4
    assert scheduled["vllm-3"][1].startswith("rack3-")
    pending = [e["message"] for e in report["events"]
               if e["type"] == "Pending" and e["object"] == "Pod inference/vllm-3"]
    assert "didn't match pod anti-affinity rules" in pending[0]
    made = {e["object"]: e["seconds"] for e in report["events"] if e["type"] == "Created"
            and e["object"].startswith("StatefulSet ")}
    assert made == {"StatefulSet inference/vllm-0": 60.0, "StatefulSet inference/vllm-1": 60.0,
                    "StatefulSet inference/vllm-2": 60.0, "StatefulSet inference/vllm-3": 1860.0}


def test_validate_says_it_checked_a_leaderworkerset(capsys: pytest.CaptureFixture[str]) -> None:
    """validate's note for the example's LWS: checked against the published CRD and as its webhook checks it, not
    'passed through unchecked'."""
    assert main(["validate", "-f", str(EXAMPLE)]) == 0
    captured = capsys.readouterr()
    said = captured.out + captured.err
    assert ("LeaderWorkerSet/vllm: a LeaderWorkerSet: checked against its published CustomResourceDefinition "
            "(github.com/kubernetes-sigs/lws v0.9.0, f056f61) and field by field") in said, said
    assert "passed through unchecked" not in said
