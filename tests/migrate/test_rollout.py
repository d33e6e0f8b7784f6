"""``kubedra migrate plan``: the shipped rollout example, its runbook, and bad input refused with file, object, field."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec
import pytest
import yaml
from tests.migrate.test_rollout_property import per_gpu

from kubedra.cli import main
from kubedra.cluster import catalogue
from kubedra.migrate import mig
from kubedra.migrate.rollout import read_cluster
from kubedra.migrate.workloads import class_for
from kubedra.objects.load import load_paths
from kubedra.sim.scenario import build_scenario

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "migrate" / "rollout"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_example_table_compares_the_orders(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "migrate", "plan", str(EXAMPLE))
    assert code == 0
    # The time-sliced A100s go last: the embeddings pods they can no longer hold wait through fewer waves.
    assert "WAVE 1: h100-2\n  no pod evicted or waiting" in out and "WAVE 4: a100-1" in out
    assert "default/notebook                    yes       lost (bare pod)" in out
    # Wave 4's inference pod, evicted while a100-1 drains, preempts an embeddings pod on a100-0 (priority 1000 over
    # 0, as kube-scheduler would; before preemption was modelled it waited for a100-1's uncordon), whose replacement
    # lands on the switched a100-1: one pod preempted, one fewer waiting.
    assert "default/embeddings-97fffc8c-pc8zj   no, preempted   a100-1" in out
    assert "preempted default/embeddings-97fffc8c-pc8zj: by default/inference-9d9d69ff8-c2mjq on a100-0" in out
    assert "smart (chosen)   5       10          1           1      1         1" in out
    assert "naive            5       13          0           1      8         1" in out
    assert "time-slicing shares each GPU among 2 pods" in out


def test_example_runbook(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "migrate", "plan", str(EXAMPLE), "--order", "naive", "--max-unavailable", "2",
                       "-o", "yaml")
    assert code == 0
    doc: dict[str, Any] = yaml.safe_load(out)
    assert doc["kind"] == "RolloutPlan" and doc["order"] == "naive"
    assert [w["nodes"] for w in doc["waves"]] == [["a100-0", "a100-1"], ["h100-0", "h100-1"], ["h100-2"]]
    first = doc["waves"][0]
    assert first["commands"][:4] == [
        "kubectl cordon a100-0",
        "kubectl drain a100-0 --ignore-daemonsets --delete-emptydir-data",
        "kubectl label node a100-0 nvidia.com/gpu.deploy.device-plugin=false --overwrite",
        "kubectl label node a100-0 nvidia.com/dra-kubelet-plugin=true --overwrite",
    ]
    assert first["commands"][-1] == "kubectl uncordon a100-1"
    assert first["lost"] == ["default/notebook"]
    # Both A100s switched at once: time-slicing's 16 slots become 8 GPUs; the PDB's inference pods have nowhere to
    # go while both drain.
    assert first["waiting"]
    assert [b["budget"] for b in first["budgets"]] == ["default/inference"]
    assert set(doc["compare"]) == {"smart"}


def test_json_output(capsys: pytest.CaptureFixture[str]) -> None:
    import json

    code, out, _ = run(capsys, "migrate", "plan", str(EXAMPLE), "-o", "json")
    assert code == 0
    assert json.loads(out)["summary"]["waves"] == 5


def test_help_teaches(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "migrate", "plan", "--help")
    assert code == 0
    assert "kubedra migrate plan examples/migrate/rollout" in out


def test_node_without_gfd_product_label_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "node.yaml"
    path.write_text("apiVersion: v1\nkind: Node\nmetadata: {name: n1}\nstatus:\n  allocatable: {nvidia.com/gpu: '4', "
                    "pods: '110'}\n  capacity: {nvidia.com/gpu: '4', pods: '110'}\n")
    code, _, err = run(capsys, "migrate", "plan", str(path))
    assert code == 2
    assert "node.yaml" in err and "Node n1" in err and "nvidia.com/gpu.product" in err


def gfd_nodes(cluster: Any) -> list[dict[str, Any]]:
    """The example's device-plugin nodes as plain Nodes, labelled as GPU Feature Discovery labels them."""
    out = []
    for gpu in cluster.gpu_nodes.values():
        model = "NVIDIA-A100-SXM4-40GB" if gpu.pool == "a100" else "NVIDIA-H100-80GB-HBM3"
        node = msgspec.to_builtins(gpu.plugin)
        node["metadata"]["labels"].update({
            "nvidia.com/gpu.product": model + ("-SHARED" if gpu.replicas > 1 else ""),
            "nvidia.com/gpu.count": str(len(gpu.slices[0].spec.devices)),
            "nvidia.com/gpu.replicas": str(gpu.replicas)})
        out.append({"apiVersion": "v1", "kind": "Node", **node})
    return out


def test_gfd_labelled_nodes_plan_as_their_nodepools(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    loaded = load_paths([str(EXAMPLE)], recursive=True)
    cluster = read_cluster(loaded, build_scenario(loaded))
    (tmp_path / "nodes.yaml").write_text(yaml.safe_dump_all(gfd_nodes(cluster)))
    (tmp_path / "workloads.yaml").write_text((EXAMPLE / "workloads.yaml").read_text())
    code, pools, _ = run(capsys, "migrate", "plan", str(EXAMPLE), "-o", "json")
    assert code == 0
    code, nodes, err = run(capsys, "migrate", "plan", str(tmp_path), "-o", "json")
    assert code == 0, err
    want, got = json.loads(pools), json.loads(nodes)
    assert got["waves"] == want["waves"] and got["compare"] == want["compare"] and got["summary"] == want["summary"]
    assert any("Node a100-0: time-slicing shares each GPU among 2 pods" in n for n in got["notes"])


def test_bad_nodepool_field_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "pool.yaml"
    path.write_text("apiVersion: kubedra.io/v1alpha1\nkind: NodePool\nmetadata: {name: p}\nspec:\n  count: 1\n"
                    "  gpu: {model: A100-40GB, count: 99}\n  devicePlugin: true\n")
    code, _, err = run(capsys, "migrate", "plan", str(path))
    assert code == 2
    assert "pool.yaml" in err and "NodePool/p" in err and "spec.gpu.count" in err


def test_nothing_to_switch(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "pool.yaml"
    path.write_text("apiVersion: kubedra.io/v1alpha1\nkind: NodePool\nmetadata: {name: p}\nspec:\n  count: 1\n"
                    "  gpu: {model: A100-40GB, count: 2}\n")
    code, _, err = run(capsys, "migrate", "plan", str(path))
    assert code == 2
    assert "devicePlugin" in err


def test_migrate_still_takes_files(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "migrate", str(ROOT / "examples" / "migrate" / "training-job.yaml"), "-q")
    assert code == 0 and "ResourceClaimTemplate" in out


def _two_nodes(victim: str) -> str:
    """Two device-plugin nodes of 2 GPUs: a high-priority Deployment preferring ``a``, and ``victim`` (a Deployment's
    or a bare pod's spec, priority 0, 2 GPUs) on ``b``, its PDB asking 1."""
    nodes = "".join(f"""apiVersion: v1
kind: Node
metadata:
  name: {name}
  labels: {{kubernetes.io/hostname: {name}, nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3, nvidia.com/gpu.count: "2"}}
status:
  allocatable: {{cpu: "32", memory: 256Gi, pods: "110", nvidia.com/gpu: "2"}}
  capacity: {{cpu: "32", memory: 256Gi, pods: "110", nvidia.com/gpu: "2"}}
---
""" for name in ("a", "b"))
    return nodes + f"""apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {{name: serving}}
value: 1000
---
apiVersion: apps/v1
kind: Deployment
metadata: {{name: serve}}
spec:
  replicas: 1
  selector: {{matchLabels: {{app: serve}}}}
  template:
    metadata: {{labels: {{app: serve}}}}
    spec:
      priorityClassName: serving
      affinity:
        nodeAffinity:
          preferredDuringSchedulingIgnoredDuringExecution:
          - weight: 100
            preference: {{matchExpressions: [{{key: kubernetes.io/hostname, operator: In, values: [a]}}]}}
      containers:
      - {{name: server, image: server, resources: {{limits: {{nvidia.com/gpu: 2}}}}}}
---
{victim}
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {{name: batch}}
spec:
  minAvailable: 1
  selector: {{matchLabels: {{app: batch}}}}
"""


BATCH_DEPLOYMENT = """apiVersion: apps/v1
kind: Deployment
metadata: {name: batch}
spec:
  replicas: 1
  selector: {matchLabels: {app: batch}}
  template:
    metadata: {labels: {app: batch}}
    spec:
      containers:
      - {name: work, image: work, resources: {limits: {nvidia.com/gpu: 2}}}"""
BATCH_POD = """apiVersion: v1
kind: Pod
metadata: {name: batch, labels: {app: batch}}
spec:
  containers:
  - {name: work, image: work, resources: {limits: {nvidia.com/gpu: 2}}}"""


def test_a_recreated_pod_preempts_a_lower_priority_one_elsewhere(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """Wave 1 drains ``a``: the serving pod's replacement finds ``b`` full and preempts the batch pod there, as
    kube-scheduler does (priority 1000 over 0; the batch PDB only makes its pod a last-chosen victim, and it is the
    only candidate). The batch Deployment's replacement lands on ``a`` once it is switched and uncordoned (served
    through DRA's extended-resource mapping); the PDB counts the preemption: 0 batch pods while ``a`` drains.
    Wave 2 drains ``b``: the batch pod on ``a`` is carried bound with its allocated claim, so the serving pod cannot
    land there (preemption frees no DRA device in 1.37) and waits for ``b``'s switch."""
    (tmp_path / "cluster.yaml").write_text(_two_nodes(BATCH_DEPLOYMENT))
    code, out, err = run(capsys, "migrate", "plan", str(tmp_path), "--order", "naive", "-o", "json")
    assert code == 0, err
    doc = json.loads(out)
    first, second = doc["waves"]
    [serve] = first["evicted"]
    assert serve.startswith("default/serve-") and first["landed"] == {serve: "b"}
    [batch] = first["preempted"]
    assert batch.startswith("default/batch-") and first["preempted"][batch] == f"by {serve} on b"
    assert first["lost"] == [] and first["waiting"] == {}
    assert [(b["budget"], b["duringDrain"], b["after"], b["losesQuorum"]) for b in first["budgets"]] == [
        ("default/batch", 0, 1, True)]
    assert second["evicted"] == [serve] and second["landed"] == {serve: "b"} and second["preempted"] == {}
    assert doc["summary"]["preempted"] == 1
    code, out, _ = run(capsys, "migrate", "plan", str(tmp_path), "--order", "naive")
    assert f"{batch}   no, preempted   a" in out
    assert f"  preempted {batch}: by {serve} on b" in out


def test_a_bare_pod_preempted_in_a_wave_is_lost(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "cluster.yaml").write_text(_two_nodes(BATCH_POD))
    code, out, err = run(capsys, "migrate", "plan", str(tmp_path), "--order", "naive", "-o", "json")
    assert code == 0, err
    first = json.loads(out)["waves"][0]
    assert list(first["preempted"]) == ["default/batch"] and first["lost"] == ["default/batch"]
    assert "default/batch" not in first["waiting"]
    assert [(b["budget"], b["duringDrain"], b["after"]) for b in first["budgets"]] == [("default/batch", 0, 0)]


def _mig_node(name: str, labels: dict[str, str], resources: dict[str, int]) -> str:
    advertised = {"cpu": "32", "memory": "256Gi", "pods": "110", **{k: str(v) for k, v in resources.items()}}
    return yaml.safe_dump({"apiVersion": "v1", "kind": "Node", "metadata": {
        "name": name, "labels": {"kubernetes.io/hostname": name, **labels}},
        "status": {"allocatable": advertised, "capacity": advertised}})


def _mig_deployment(name: str, resource: str, replicas: int) -> str:
    return yaml.safe_dump({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name}, "spec": {
        "replicas": replicas, "selector": {"matchLabels": {"app": name}}, "template": {
            "metadata": {"labels": {"app": name}},
            "spec": {"containers": [{"name": "w", "image": "w", "resources": {"limits": {resource: 1}}}]}}}})


MIXED = {"nvidia.com/mig-1g.5gb": 2, "nvidia.com/mig-2g.10gb": 1, "nvidia.com/mig-3g.20gb": 1}  # A100 all-balanced


def _mig_cluster(tmp_path: Path) -> Path:
    """A mixed node (2 A100-40GB, all-balanced), a single node (all-1g.5gb on 2 A100-40GB: 14 devices) and
    Deployments asking each mixed profile as many times as the node has it."""
    mixed = {k: 2 * v for k, v in MIXED.items()}
    docs = [_mig_node("mixed-0", {"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB", "nvidia.com/gpu.count": "2",
                                  "nvidia.com/mig.strategy": "mixed", "nvidia.com/mig.config": "all-balanced"}, mixed),
            _mig_node("single-0", {"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB-MIG-1g.5gb",
                                   "nvidia.com/gpu.count": "14", "nvidia.com/mig.strategy": "single",
                                   "nvidia.com/mig.config": "all-1g.5gb"}, {"nvidia.com/gpu": 14})]
    docs += [_mig_deployment(r.removeprefix("nvidia.com/mig-").replace(".", "-"), r, n) for r, n in mixed.items()]
    (tmp_path / "cluster.yaml").write_text("---\n".join(docs))
    return tmp_path


def test_mig_nodes_publish_their_mig_devices(tmp_path: Path) -> None:
    """Once switched, each node publishes the MIG devices its device plugin advertises, one per placement, named as
    NVIDIA's driver names them, without whole GPUs; both stay served by the device plugin before."""
    loaded = load_paths([str(_mig_cluster(tmp_path))], recursive=True)
    cluster = read_cluster(loaded, build_scenario(loaded))
    for name, advertised in (("mixed-0", {k: 2 * v for k, v in MIXED.items()}),
                             ("single-0", {"nvidia.com/mig-1g.5gb": 14})):
        gpu = cluster.gpu_nodes[name]
        devices = [d for s in gpu.slices for d in s.spec.devices]
        published: dict[str, int] = {}
        for d in devices:
            assert d.attributes["type"].string == "mig" and d.name.startswith("gpu-") and "-mig-" in d.name
            key = "nvidia.com/mig-" + str(d.attributes["profile"].string)
            published[key] = published.get(key, 0) + 1
        assert published == advertised
        assert len({d.name for d in devices}) == len(devices)
        assert not any(k == "nvidia.com/gpu" or k.startswith("nvidia.com/mig-") for k in gpu.dra.status.allocatable)
    assert cluster.gpu_nodes["single-0"].plugin.status.allocatable["nvidia.com/gpu"] == "14"
    notes = "\n".join(cluster.notes)
    assert "Node mixed-0: nvidia.com/mig.strategy=mixed" in notes and "Node single-0: nvidia.com/mig.strategy=single" in notes
    assert "not planned yet" not in notes


def test_mig_pods_land_on_mig_devices(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Every pod asking nvidia.com/mig-<profile> runs before (device plugin), during (the other node serves none of
    them: they wait only while their node drains) and after its node's switch (DRA's MIG device of that profile)."""
    code, out, err = run(capsys, "migrate", "plan", str(_mig_cluster(tmp_path)), "--order", "naive", "-o", "json")
    assert code == 0, err
    doc = json.loads(out)
    pods = sum(2 * v for v in MIXED.values())
    assert doc["summary"]["waiting"] == 0
    for wave in doc["waves"]:
        assert wave["waiting"] == {} and wave["lost"] == []
        if wave["nodes"] == ["mixed-0"]:
            assert len(wave["landed"]) == pods and set(wave["landed"].values()) == {"mixed-0"}


@pytest.mark.parametrize(("labels", "label"), [
    ({"nvidia.com/mig.strategy": "half"}, "nvidia.com/mig.strategy"),
    ({"nvidia.com/mig.strategy": "single", "nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB-MIG-INVALID"},
     "nvidia.com/gpu.product"),
    ({"nvidia.com/mig.strategy": "single", "nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB-MIG-9g.99gb"},
     "nvidia.com/gpu.product"),
    ({"nvidia.com/mig.strategy": "mixed", "nvidia.com/gpu.count": "1", "nvidia.com/mig-7g.40gb.count": "2"},
     "nvidia.com/gpu.count"),
    ({"nvidia.com/mig.strategy": "mixed", "nvidia.com/mig-1g.5gb.count": "many"}, "nvidia.com/mig-1g.5gb.count"),
])
def test_bad_mig_labels_are_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str], labels: dict[str, str],
                                    label: str) -> None:
    base = {"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB", "nvidia.com/gpu.count": "1"}
    (tmp_path / "node.yaml").write_text(_mig_node("n1", {**base, **labels}, {"nvidia.com/gpu": 1}))
    code, _, err = run(capsys, "migrate", "plan", str(tmp_path))
    assert code == 2, err
    assert "Node n1" in err and f"metadata.labels[{label}]" in err


def test_mixed_node_without_counts_is_said(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "node.yaml").write_text(_mig_node("n1", {
        "nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB", "nvidia.com/gpu.count": "1",
        "nvidia.com/mig.strategy": "mixed"}, {"nvidia.com/gpu": 1}))
    code, out, err = run(capsys, "migrate", "plan", str(tmp_path))
    assert code == 0, err
    assert "Node n1: nvidia.com/mig.strategy=mixed but neither" in out and "cannot be known" in out


def test_whole_gpu_pods_on_a_single_node_wait_after_its_switch(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    """mig.py's rules for ``mig.strategy=single``: the device plugin serves every MIG device as ``nvidia.com/gpu``
    (``nvidia.com/gpu.count`` counts them), so pods asking whole GPUs fill the node before its switch; once switched
    the DRA driver publishes MIG devices, which the ``nvidia.com/gpu`` class does not select: each of those pods is
    evicted and waits, and the plan's note says which DeviceClass they would need."""
    model, profile_name, gpus = catalogue.lookup("A100-40GB"), "3g.20gb", 2
    profile = next(p for p in model.mig_profiles if p.name == profile_name)
    devices = gpus * per_gpu(model.name, profile)  # mig-parted's all-3g.20gb
    product = model.product_name.replace(" ", "-")
    (tmp_path / "cluster.yaml").write_text("---\n".join([
        _mig_node("single-0", {"nvidia.com/gpu.product": f"{product}-MIG-{profile_name}",
                               "nvidia.com/gpu.count": str(devices), "nvidia.com/mig.strategy": "single"},
                  {"nvidia.com/gpu": devices}),
        _mig_deployment("whole", "nvidia.com/gpu", devices)]))
    code, out, err = run(capsys, "migrate", "plan", str(tmp_path), "--order", "naive", "-o", "json")
    assert code == 0, err
    doc = json.loads(out)
    (wave,) = doc["waves"]
    assert wave["nodes"] == ["single-0"] and len(wave["evicted"]) == devices  # all ran on the device plugin
    assert set(wave["waiting"]) == set(wave["evicted"]) and wave["landed"] == {} and wave["lost"] == []
    assert doc["summary"]["waiting"] == devices
    note = (f"Node single-0: nvidia.com/mig.strategy=single: the device plugin serves its {devices} MIG devices "
            f"{profile_name} as nvidia.com/gpu (read as {gpus} {model.name} GPUs of up to {per_gpu(model.name, profile)})")
    rewritten = ("pods asking nvidia.com/gpu land there only rewritten to claims of DeviceClass "
                 f"{class_for(f'nvidia.com/mig-{profile_name}')}")
    (said,) = [n for n in doc["notes"] if n.startswith(note)]
    assert said.endswith(rewritten)
    code, out, err = run(capsys, "migrate", "plan", str(tmp_path), "--order", "naive")
    assert code == 0, err
    assert f"note: {said}\n" in out
    assert all(f"{pod}   yes       waiting" in out for pod in wave["evicted"])


def test_one_gpu_holds_as_many_mig_devices_as_its_engines_allow() -> None:
    """A profile with media extensions takes the GPU's only OFA and JPEG engines (the counters NVIDIA's driver
    publishes per GPU are the whole-GPU profile's, ../shared/reference/gpu-drivers.md): NVML lists seven places for
    1g.5gb+me, but one A100 holds one. Held to the property test's own reading (intervals, then engines)."""
    for name in catalogue.known_names():
        model = catalogue.lookup(name)
        for profile in model.mig_profiles:
            assert mig.per_gpu(model, profile) == per_gpu(model.name, profile), (name, profile.name)
    a100 = catalogue.lookup("A100-40GB")  # the NVIDIA MIG user guide's A100-40GB profile table, "Instances"
    assert {p.name: mig.per_gpu(a100, p) for p in a100.mig_profiles} == {
        "1g.5gb": 7, "1g.5gb+me": 1, "1g.10gb": 4, "2g.10gb": 3, "3g.20gb": 2, "4g.20gb": 1, "7g.40gb": 1}
