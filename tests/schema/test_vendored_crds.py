"""The vendored, published CRDs of the custom kinds kubedra reads: each kind's example passes, and a wrong type, an
unknown field, a missing required field and a value outside an enum are refused with the field named, at the
loader (the front door simulate, migrate and validate share) and by validate with the line; a CRD among the inputs
overrides the vendored one; every vendored file carries its provenance."""

from __future__ import annotations

import copy
import gzip
import json
from importlib import resources
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubedra.cli import main
from kubedra.objects.errors import InvalidInputError
from kubedra.objects.load import load_text
from kubedra.schema.published import manifest, read

ROOT = Path(__file__).resolve().parents[2]
CONTAINERS = {"containers": [{"name": "c", "image": "x"}]}


def example(path: str, kind: str) -> dict[str, Any]:
    found: dict[str, Any] = next(d for d in yaml.safe_load_all((ROOT / path).read_text()) if d and d["kind"] == kind)
    return found


def ray_cluster() -> dict[str, Any]:
    return example("examples/workloads/ray-cluster.yaml", "RayCluster")


JOBSET = {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": {"name": "js"},
          "spec": {"replicatedJobs": [{"name": "w", "replicas": 1, "template": {"spec": {"template": {
              "spec": {"restartPolicy": "Never", **CONTAINERS}}}}}]}}
RAYJOB = {"apiVersion": "ray.io/v1", "kind": "RayJob", "metadata": {"name": "rj"},
          "spec": {"entrypoint": "python train.py", "rayClusterSpec": ray_cluster()["spec"]}}
TRAINJOB = example("examples/workloads/trainjob.yaml", "TrainJob")
TRAINING_RUNTIME = example("examples/workloads/trainjob.yaml", "ClusterTrainingRuntime")
GPUCLUSTER = {"apiVersion": "nvidia.com/v1alpha1", "kind": "GPUCluster", "metadata": {"name": "gpu-cluster"},
              "spec": {"draDriver": {}}}

# kind -> (a valid document, [(path, value or DELETE, what the error says)]: wrong type, unknown, required, enum)
DELETE = object()
CASES: dict[str, tuple[dict[str, Any], list[tuple[str, Any, str]]]] = {
    "JobSet": (JOBSET, [
        ("spec.replicatedJobs.0.replicas", "two", 'spec.replicatedJobs[0].replicas: Invalid value: "string": '
                                                  "spec.replicatedJobs[0].replicas in body must be of type integer"),
        ("spec.replicatedJob", [], 'spec.replicatedJob: unknown field "spec.replicatedJob"'),
        ("spec.replicatedJobs.0.name", DELETE, "spec.replicatedJobs[0].name: Required value"),
        ("spec.startupPolicy", {"startupPolicyOrder": "Sideways"},
         'spec.startupPolicy.startupPolicyOrder: Unsupported value: "Sideways": supported values: "AnyOrder", '
         '"InOrder"'),
    ]),
    "LeaderWorkerSet": (example("examples/workloads/vllm-lws.yaml", "LeaderWorkerSet"), [
        ("spec.replicas", "2", 'spec.replicas: Invalid value: "string": spec.replicas in body must be of type '
                               "integer"),
        ("spec.leaderWorkerTemplate.workers", 3, 'spec.leaderWorkerTemplate.workers: unknown field'),
        ("spec.leaderWorkerTemplate.workerTemplate", DELETE, "spec.leaderWorkerTemplate.workerTemplate: Required value"),
        ("spec.leaderWorkerTemplate.restartPolicy", "Sometimes",
         'spec.leaderWorkerTemplate.restartPolicy: Unsupported value: "Sometimes"'),
    ]),
    "RayCluster": (ray_cluster(), [
        ("spec.suspend", "yes", 'spec.suspend: Invalid value: "string": spec.suspend in body must be of type boolean'),
        ("spec.headGroupSpecs", {}, 'spec.headGroupSpecs: unknown field "spec.headGroupSpecs"'),
        ("spec.headGroupSpec", DELETE, "spec.headGroupSpec: Required value"),
        ("spec.autoscalerOptions", {"upscalingMode": "Fast"},
         'spec.autoscalerOptions.upscalingMode: Unsupported value: "Fast": supported values: "Default", '
         '"Aggressive", "Conservative"'),
    ]),
    "RayJob": (RAYJOB, [
        ("spec.shutdownAfterJobFinishes", "yes", "spec.shutdownAfterJobFinishes: Invalid value: \"string\""),
        ("spec.entryPoint", "x", 'spec.entryPoint: unknown field "spec.entryPoint"'),
        ("spec.rayClusterSpec.headGroupSpec", DELETE, "spec.rayClusterSpec.headGroupSpec: Required value"),
        ("spec.deletionStrategy", {"onSuccess": {"policy": "Keep"}},
         'spec.deletionStrategy.onSuccess.policy: Unsupported value: "Keep"'),
    ]),
    "ClusterPolicy": (example("examples/migrate/gpu-operator/cluster-policy.yaml", "ClusterPolicy"), [
        ("spec.devicePlugin.enabled", "yes", 'spec.devicePlugin.enabled: Invalid value: "string": '
                                             "spec.devicePlugin.enabled in body must be of type boolean"),
        ("spec.devicePlugins", {}, 'spec.devicePlugins: unknown field "spec.devicePlugins"'),
        ("spec.gfd", DELETE, "spec.gfd: Required value"),
        ("spec.daemonsets", {"updateStrategy": "Always"},
         'spec.daemonsets.updateStrategy: Unsupported value: "Always": supported values: "RollingUpdate", '
         '"OnDelete"'),
    ]),
    "PyTorchJob": (example("examples/workloads/pytorchjob.yaml", "PyTorchJob"), [
        ("spec.pytorchReplicaSpecs.Worker.replicas", "3", 'spec.pytorchReplicaSpecs.Worker.replicas: Invalid value: '
                                                          '"string"'),
        ("spec.runPolicy.cleanPodPolicies", "All", 'spec.runPolicy.cleanPodPolicies: unknown field'),
        ("spec.pytorchReplicaSpecs.Master.template.spec.containers", DELETE,
         "spec.pytorchReplicaSpecs.Master.template.spec.containers: Required value"),
        ("spec.elasticPolicy", {"minReplicas": "one"}, 'spec.elasticPolicy.minReplicas: Invalid value: "string"'),
    ]),
    "TrainJob": (TRAINJOB, [
        ("spec.trainer.numNodes", "4", 'spec.trainer.numNodes: Invalid value: "string": spec.trainer.numNodes in body '
                                       "must be of type integer"),
        ("spec.trainers", {}, 'spec.trainers: unknown field "spec.trainers"'),
        ("spec.runtimeRef", DELETE, "spec.runtimeRef: Required value"),
        ("spec.suspend", "yes", 'spec.suspend: Invalid value: "string": spec.suspend in body must be of type boolean'),
    ]),
    "ClusterTrainingRuntime": (TRAINING_RUNTIME, [
        ("spec.mlPolicy.numNodes", "one", 'spec.mlPolicy.numNodes: Invalid value: "string"'),
        ("spec.mlPolicies", {}, 'spec.mlPolicies: unknown field "spec.mlPolicies"'),
        ("spec.template.spec.replicatedJobs.0.name", DELETE, "spec.template.spec.replicatedJobs[0].name: Required value"),
        ("spec.template.spec.startupPolicy", {"startupPolicyOrder": "Later"},
         'spec.template.spec.startupPolicy.startupPolicyOrder: Unsupported value: "Later"'),
    ]),
    "TrainingRuntime": ({**TRAINING_RUNTIME, "kind": "TrainingRuntime"}, [
        ("spec.mlPolicy.torch", [], 'spec.mlPolicy.torch: Invalid value: "array"'),
        ("spec.podGroupPolicys", {}, 'spec.podGroupPolicys: unknown field "spec.podGroupPolicys"'),
        ("spec.template.spec.replicatedJobs.0.template", DELETE,
         "spec.template.spec.replicatedJobs[0].template: Required value"),
        ("spec.template.spec.successPolicy", {"operator": "Most"},
         'spec.template.spec.successPolicy.operator: Unsupported value: "Most"'),
    ]),
    "GPUCluster": (GPUCLUSTER, [
        ("spec.draDriver", "on", 'spec.draDriver: Invalid value: "string": spec.draDriver in body must be of type '
                                 "object"),
        ("spec.draDrivers", {}, 'spec.draDrivers: unknown field "spec.draDrivers"'),
        ("spec.draDriver", DELETE, "spec.draDriver: Required value"),
        ("spec.daemonsets", {"updateStrategy": "Always"}, 'spec.daemonsets.updateStrategy: Unsupported value'),
    ]),
}


def changed(document: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    out = copy.deepcopy(document)
    *parents, last = path.split(".")
    node: Any = out
    for key in parents:
        node = node[int(key)] if isinstance(node, list) else node[key]
    if value is DELETE:
        del node[int(last) if isinstance(node, list) else last]
    elif isinstance(node, list):
        node[int(last)] = value
    else:
        node[last] = value
    return out


def test_every_vendored_kind_has_cases() -> None:
    assert sorted(CASES) == sorted(source.kind for source in manifest().values())


@pytest.mark.parametrize("kind", list(CASES))
def test_the_example_passes(kind: str) -> None:
    document, _ = CASES[kind]
    assert load_text(json.dumps(document), source="ok.json").raw


@pytest.mark.parametrize(("kind", "path", "value", "message"),
                         [(k, p, v, m) for k, (_, cases) in CASES.items() for p, v, m in cases],
                         ids=[f"{k}-{p}-{'missing' if v is DELETE else 'bad'}"
                              for k, (_, cases) in CASES.items() for p, v, _ in cases])
def test_the_published_schema_refuses_naming_the_field(kind: str, path: str, value: Any, message: str) -> None:
    document, _ = CASES[kind]
    with pytest.raises(InvalidInputError) as caught:
        load_text(json.dumps(changed(document, path, value)), source="bad.json")
    name = document["metadata"]["name"]
    assert f"bad.json[0]: {kind}/{name}: {message}" in str(caught.value)


def test_simulate_exits_2_and_validate_names_the_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "rc.yaml"
    path.write_text(yaml.safe_dump(changed(ray_cluster(), "spec.headGroupSpecs", {}), sort_keys=False))
    assert main(["simulate", "-f", str(path)]) == 2
    err = capsys.readouterr().err
    assert f'error: {path}[0]: RayCluster/ray-cluster: spec.headGroupSpecs: unknown field' in err, err
    assert main(["validate", "-f", str(path), "-o", "json"]) == 1
    findings = json.loads(capsys.readouterr().out)["findings"]
    line = next(i for i, text in enumerate(path.read_text().splitlines(), 1) if "headGroupSpecs" in text)
    assert [(f["object"], f["field"], f["line"]) for f in findings] == [
        ("RayCluster/ray-cluster", "spec.headGroupSpecs", line)]


OPEN_CRD = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "jobsets.jobset.x-k8s.io"},
            "spec": {"group": "jobset.x-k8s.io", "scope": "Namespaced",
                     "names": {"kind": "JobSet", "plural": "jobsets", "singular": "jobset", "listKind": "JobSetList"},
                     "versions": [{"name": "v1alpha2", "served": True, "storage": True, "schema": {"openAPIV3Schema": {
                         "type": "object", "properties": {"spec": {
                             "type": "object", "x-kubernetes-preserve-unknown-fields": True,
                             "properties": {"color": {"type": "string", "enum": ["blue"]}}}}}}}]}}


def test_a_crd_among_the_inputs_overrides_the_vendored_one(tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    unknown = changed(JOBSET, "spec.replicatedJob", [])
    text = "\n---\n".join(json.dumps(d) for d in (OPEN_CRD, unknown))
    assert load_text(text, source="in.yaml").raw  # the input's CRD keeps unknown fields
    with pytest.raises(InvalidInputError) as caught:
        load_text("\n---\n".join(json.dumps(d) for d in (OPEN_CRD, changed(JOBSET, "spec.color", "red"))))
    assert 'JobSet/js: spec.color: Unsupported value: "red": supported values: "blue"' in str(caught.value)
    path = tmp_path / "in.yaml"
    path.write_text(yaml.safe_dump(JOBSET))
    main(["validate", "-f", str(path)])
    assert "JobSet/js: a JobSet: checked against its published CustomResourceDefinition " \
           "(github.com/kubernetes-sigs/jobset v0.12.0, f22e565)" in capsys.readouterr().out


def test_every_vendored_file_carries_its_provenance_and_no_descriptions() -> None:
    folder = resources.files("kubedra.data").joinpath("crds")
    assert "Apache License" in folder.joinpath("LICENSE").read_text()
    sizes = 0
    for (api_version, kind), source in manifest().items():
        body = read(source)
        assert body["source"]["repository"] == source.repository and body["source"]["license"].startswith("Apache-2.0")
        assert body["source"]["path"].endswith(".yaml") and source.version
        crd = body["crd"]
        assert (crd["spec"]["group"], crd["spec"]["names"]["kind"]) == (api_version.split("/")[0], kind)
        assert [v["name"] for v in crd["spec"]["versions"]] == list(source.versions)
        assert '"description":"' not in json.dumps(crd, separators=(",", ":"))
        sizes += len(folder.joinpath(source.file).read_bytes())
    assert sizes < 100_000  # gzip JSON: the package stays small
    assert len(gzip.decompress(folder.joinpath("jobsets.jobset.x-k8s.io.json.gz").read_bytes())) > 10_000


def test_an_item_of_a_list_is_one_finding_on_its_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "list.yaml"
    path.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List",
                                    "items": [changed(JOBSET, "spec.replicatedJob", [])]}, sort_keys=False))
    assert main(["validate", "-f", str(path), "-o", "json"]) == 1
    findings = json.loads(capsys.readouterr().out)["findings"]
    line = next(i for i, text in enumerate(path.read_text().splitlines(), 1) if "replicatedJob:" in text)
    assert [(f["object"], f["field"], f["line"]) for f in findings] == [("JobSet/js", "spec.replicatedJob", line)]
