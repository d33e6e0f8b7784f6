"""kubedra's TrainJob expansion (``kubedra.sim.trainjobs``) against the released Kubeflow Trainer controller manager
v2.3.0 (``build.sh``), with the JobSet controller v0.12.0 (``tests/sigs``) and kube-controller-manager's Job
controller on a control plane of the module's own: the CRDs, webhooks and the upstream torch runtime come from the
module go.mod pins. For each TrainJob the JobSet the real controller applies is compared with kubedra's, field by
field (env, ports, resources, counts, labels), after the JobSet webhook's defaults (which kubedra's JobSet expansion
applies, proven in tests/sigs); then the pods the real Job controller makes are compared with kubedra's expansion
(names without their random suffix, containers' resources, labels that carry no uid). What the TrainJob webhook
refuses, kubedra refuses in its words."""

from __future__ import annotations

import copy
import json
import subprocess
import urllib.error
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from tests.controlplane.fixture import Component, ControlPlane, free_port
from tests.sigs import harness
from tests.sigs.jobs import compare, kubedra_jobs, real_jobs

from kubedra.objects.errors import InvalidInputError
from kubedra.objects.load import load_text
from kubedra.sim.scenario import build_scenario
from kubedra.sim.trainjobs import trainjob_jobset

pytestmark = pytest.mark.controlplane

HERE = Path(__file__).resolve().parent
BINARY = HERE / "bin" / "trainer-controller-manager"
CERTS = Path("/tmp/k8s-webhook-server/serving-certs")  # pkg/util/cert's certDir: fixed in v2.3.0
TRAINER = "trainer.kubeflow.org/v1alpha1"
NODE_CONTAINER = {"name": "node", "image": "pytorch/pytorch:2.13.0-cuda13.0-cudnn9-runtime"}


def trainer_module() -> Path:
    out = subprocess.run(["go", "list", "-mod=readonly", "-m", "-f", "{{.Dir}}", "github.com/kubeflow/trainer/v2"],
                         cwd=HERE, check=True, capture_output=True, text=True).stdout.strip()
    return Path(out)


@pytest.fixture(scope="module")
def plane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlane]:
    harness.require(BINARY)
    harness.require(harness.BIN / "jobset-controller")
    tmp = tmp_path_factory.mktemp("trainer")
    jobset = harness.module_dir("sigs.k8s.io/jobset")
    module = trainer_module()
    with harness.control_plane(tmp / "plane", ("job-controller",)) as started, harness.controller(
        started, tmp / "jobset", harness.BIN / "jobset-controller", "config.jobset.x-k8s.io/v1alpha1", jobset,
        [jobset / "config/components/crd/bases/jobset.x-k8s.io_jobsets.yaml"], jobset / "config/components/webhook",
    ):
        harness.install_crds(started, sorted((module / "manifests/base/crds").glob("trainer.*.yaml")))
        ca = harness.serving_cert(CERTS)
        port, probe, status = free_port(), free_port(), free_port()
        config = {"apiVersion": "config.trainer.kubeflow.org/v1alpha1", "kind": "Configuration",
                  "certManagement": {"enable": False}, "leaderElection": {"leaderElect": False},
                  "webhook": {"port": port, "host": "127.0.0.1"}, "metrics": {"bindAddress": "0"},
                  "health": {"healthProbeBindAddress": f"127.0.0.1:{probe}"}, "statusServer": {"port": status}}
        (tmp / "trainer.yaml").write_text(yaml.safe_dump(config))
        args = [str(BINARY), f"--kubeconfig={started.kubeconfig}", f"--config={tmp / 'trainer.yaml'}",
                "--zap-devel=false"]
        component = Component(BINARY.name, args, tmp / "trainer.log", f"http://127.0.0.1:{probe}/readyz")
        component.start()
        try:
            harness.wait_ready(component, probe)
            harness.install_webhooks(started, module / "manifests/base/webhook", port, ca,
                                     ("patch_mutating.yaml", "patch_validating.yaml"))
            torch = yaml.safe_load((module / "manifests/base/runtimes/torch_distributed.yaml").read_text())
            started.request("POST", f"/apis/{TRAINER}/clustertrainingruntimes", torch)
            yield started
        finally:
            component.stop()


def _runtime(kind: str, name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": TRAINER, "kind": kind, "metadata": {"name": name}, "spec": spec}


def _rjob(name: str, ancestor: str | None, containers: list[dict[str, Any]], **pod: Any) -> dict[str, Any]:
    meta = {"labels": {"trainer.kubeflow.org/trainjob-ancestor-step": ancestor}} if ancestor else {}
    return {"name": name, "template": {"metadata": meta, "spec": {"template": {"spec": {"containers": containers,
                                                                                         **pod}}}}}


CLAIMED = _runtime("ClusterTrainingRuntime", "torch-dra", {
    "mlPolicy": {"numNodes": 1, "torch": {}},
    "template": {"metadata": {"labels": {"team": "ml"}}, "spec": {"replicatedJobs": [
        _rjob("dataset-initializer", "dataset-initializer",
              [{"name": "dataset-initializer", "image": "ghcr.io/kubeflow/trainer/dataset-initializer",
                "resources": {"requests": {"cpu": "2"}}, "volumeMounts": [{"name": "initializer",
                                                                            "mountPath": "/workspace"}]}],
              volumes=[{"name": "initializer", "emptyDir": {}}]),
        _rjob("node", "trainer",
              [{**NODE_CONTAINER, "env": [{"name": "NCCL_DEBUG", "value": "INFO"}],
                "resources": {"requests": {"cpu": "8", "memory": "64Gi"}, "claims": [{"name": "gpus"}]}}],
              resourceClaims=[{"name": "gpus", "resourceClaimTemplateName": "eight-gpus"}]),
    ]}}})
PLAIN = _runtime("TrainingRuntime", "plain", {
    "template": {"spec": {"replicatedJobs": [
        _rjob("node", "trainer", [{**NODE_CONTAINER, "resources": {"limits": {"cpu": "4"}}}], restartPolicy="Never"),
    ]}}})

# (id, runtimes to create, the TrainJob's spec)
CASES: list[tuple[str, list[dict[str, Any]], dict[str, Any]]] = [
    ("torch-gpus", [], {"runtimeRef": {"name": "torch-distributed"}, "trainer": {
        "numNodes": 2, "image": "my/llm:1", "command": ["torchrun", "train.py"], "args": ["--epochs", "3"],
        "env": [{"name": "WANDB_MODE", "value": "offline"}],
        "resourcesPerNode": {"limits": {"nvidia.com/gpu": "8"}, "requests": {"cpu": "16"}}}}),
    ("torch-cpus", [], {"runtimeRef": {"name": "torch-distributed"}, "trainer": {
        "numNodes": 3, "resourcesPerNode": {"requests": {"cpu": "2500m"}}}}),
    ("torch-claims-patched", [CLAIMED], {
        "runtimeRef": {"name": "torch-dra"},
        "initializer": {"dataset": {"storageUri": "hf://tatsu-lab/alpaca", "env": [{"name": "SPLIT", "value": "a"}]}},
        "trainer": {"numNodes": 4, "numProcPerNode": 8, "resourcesPerNode": {"requests": {"memory": "128Gi"}}},
        "runtimePatches": [{"manager": "kubedra.io/test", "trainingRuntimeSpec": {"template": {
            "metadata": {"labels": {"cost-center": "42"}},
            "spec": {"replicatedJobs": [{"name": "node", "template": {"spec": {"template": {
                "metadata": {"labels": {"tier": "gold"}},
                "spec": {"nodeSelector": {"gpu.nvidia.com/product": "H100"},
                         "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
                         "containers": [{"name": "node", "volumeMounts": [{"name": "initializer",
                                                                            "mountPath": "/workspace"}]}],
                         "volumes": [{"name": "initializer", "emptyDir": {}}]}}}}}]},
        }}}]}),
    ("plain-namespaced", [PLAIN], {"runtimeRef": {"name": "plain", "kind": "TrainingRuntime"},
                                   "trainer": {"numNodes": 2, "image": "my/job:2"}}),
]

# The JobSet webhook's defaults (v0.12.0), which kubedra's JobSet expansion applies (tests/sigs proves it)
JOBSET_DEFAULTS = {"network": {"enableDNSHostnames": True, "publishNotReadyAddresses": True},
                   "startupPolicy": {"startupPolicyOrder": "AnyOrder"}, "successPolicy": {"operator": "All"}}


def _defaulted(spec: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(spec)
    for key, value in JOBSET_DEFAULTS.items():
        if key == "network":
            out[key] = {**value, **out.get(key, {})}
        else:
            out.setdefault(key, value)
    for rjob in out["replicatedJobs"]:
        rjob.setdefault("groupName", "default")
        job = rjob["template"]["spec"]
        job.setdefault("completionMode", "Indexed")
        job["template"].setdefault("metadata", {})
        job["template"]["spec"].setdefault("restartPolicy", "OnFailure")
    return out


def _create(plane: ControlPlane, namespace: str, runtimes: list[dict[str, Any]], spec: dict[str, Any],
            name: str) -> dict[str, Any]:
    for runtime in runtimes:
        if runtime["kind"] == "TrainingRuntime":
            scoped = {**runtime, "metadata": {**runtime["metadata"], "namespace": namespace}}
            plane.request("POST", f"/apis/{TRAINER}/namespaces/{namespace}/trainingruntimes", scoped)
        elif harness.get_or_none(plane, f"/apis/{TRAINER}/clustertrainingruntimes/{runtime['metadata']['name']}") \
                is None:
            plane.request("POST", f"/apis/{TRAINER}/clustertrainingruntimes", runtime)
    body = {"apiVersion": TRAINER, "kind": "TrainJob", "metadata": {"name": name, "namespace": namespace},
            "spec": spec}
    try:
        made: dict[str, Any] = plane.request("POST", f"/apis/{TRAINER}/namespaces/{namespace}/trainjobs", body)
    except urllib.error.HTTPError as error:  # the Status, for the failure message and the refusal tests
        raise AssertionError(error.read().decode()) from error
    return made


def _runtime_of(plane: ControlPlane, namespace: str, made: dict[str, Any]) -> dict[str, Any]:
    ref = made["spec"]["runtimeRef"]
    if ref["kind"] == "TrainingRuntime":
        return plane.get(f"/apis/{TRAINER}/namespaces/{namespace}/trainingruntimes/{ref['name']}")
    return plane.get(f"/apis/{TRAINER}/clustertrainingruntimes/{ref['name']}")


def _as_input(obj: dict[str, Any]) -> dict[str, Any]:
    """A served object as a user's manifest: its spec and the metadata a manifest carries (the uid kept)."""
    meta = {k: v for k, v in obj["metadata"].items() if k in ("name", "namespace", "uid", "labels", "annotations")}
    return {"apiVersion": obj["apiVersion"], "kind": obj["kind"], "metadata": meta, "spec": obj["spec"]}


@pytest.mark.parametrize(("case", "runtimes", "spec"), CASES, ids=[c[0] for c in CASES])
def test_the_jobset_jobs_and_pods_are_the_real_controllers(plane: ControlPlane, case: str,
                                                           runtimes: list[dict[str, Any]],
                                                           spec: dict[str, Any]) -> None:
    namespace = plane.create_namespace()
    made = _create(plane, namespace, runtimes, spec, "llm")
    runtime = _runtime_of(plane, namespace, made)
    real = plane.wait_for(lambda: harness.get_or_none(
        plane, f"/apis/jobset.x-k8s.io/v1alpha2/namespaces/{namespace}/jobsets/llm"), timeout=harness.WAIT,
        what="the TrainJob's JobSet")
    ours, _ = trainjob_jobset(made, runtime)
    assert ours["metadata"].get("labels") == real["metadata"].get("labels")
    assert ours["metadata"]["ownerReferences"] == real["metadata"]["ownerReferences"]
    import difflib

    mine = json.dumps(_defaulted(ours["spec"]), sort_keys=True, indent=1).splitlines()
    theirs = json.dumps(real["spec"], sort_keys=True, indent=1).splitlines()
    assert mine == theirs, "\n".join(difflib.unified_diff(theirs, mine, "real", "kubedra", lineterm=""))
    docs = [_as_input(runtime), _as_input(made)]
    compare(plane, namespace, docs, real_jobs(plane, namespace, len(kubedra_jobs(docs))))


def _patch(rjob: str, container: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"manager": "kubedra.io/test", "trainingRuntimeSpec": {"template": {"spec": {"replicatedJobs": [
        {"name": rjob, "template": {"spec": {"template": {"spec": {"containers": [container]}}}}}]}}}}]


TORCH = {"name": "torch-distributed"}
REFUSED: list[tuple[str, list[dict[str, Any]], dict[str, Any]]] = [
    ("no-runtime", [], {"runtimeRef": {"name": "nowhere"}}),
    ("no-namespaced-runtime", [], {"runtimeRef": {"name": "nowhere", "kind": "TrainingRuntime"}}),
    ("unknown-runtime-kind", [], {"runtimeRef": {"name": "torch-distributed", "kind": "Runtime"}}),
    ("torchrun-variables", [], {"runtimeRef": TORCH, "trainer": {"env": [{"name": "PET_NNODES", "value": "9"},
                                                                        {"name": "PET_MASTER_PORT", "value": "1"}]}}),
    ("env-patch-on-node", [], {"runtimeRef": TORCH, "runtimePatches": _patch("node", {"name": "node", "env": [
        {"name": "A", "value": "b"}]})}),
    ("dataset-without-job", [], {"runtimeRef": TORCH, "initializer": {"dataset": {"storageUri": "hf://a/b"}}}),
]


@pytest.mark.parametrize(("case", "runtimes", "spec"), REFUSED, ids=[c[0] for c in REFUSED])
def test_what_the_webhook_refuses_kubedra_refuses_in_its_words(plane: ControlPlane, case: str,
                                                              runtimes: list[dict[str, Any]],
                                                              spec: dict[str, Any]) -> None:
    """Each problem kubedra finds is one the webhook answers: the field (kubedra names ``spec.runtimeRef`` by its
    JSON name where the webhook prints Go's ``spec.RuntimeRef``), the value (runtime patches get a ``time`` from
    the defaulting webhook, so only their message after the value is compared), and nothing else is refused."""
    namespace = plane.create_namespace()
    torch = yaml.safe_load((trainer_module() / "manifests/base/runtimes/torch_distributed.yaml").read_text())
    with pytest.raises(AssertionError) as refused:
        _create(plane, namespace, runtimes, spec, "bad")
    real = json.loads(str(refused.value).split("\n")[0])["message"].replace("spec.RuntimeRef:", "spec.runtimeRef:")
    body = {"apiVersion": TRAINER, "kind": "TrainJob", "metadata": {"name": "bad", "namespace": namespace},
            "spec": spec}
    with pytest.raises(InvalidInputError) as ours:
        build_scenario(load_text(yaml.safe_dump_all([torch, *runtimes, body])))
    found = [(p.location.field, p.message) for p in ours.value.problems]
    for field, message in found:
        shown = message if field != "spec.runtimePatches" else message.split(": ", 2)[2]
        assert field and shown in real.split(f"{field}: ", 1)[-1], (found, real)
    assert len(found) == max(1, real.count(", spec.")+1 if real.count("[spec.") else 1), (found, real)
