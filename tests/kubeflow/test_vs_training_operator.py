"""kubedra's PyTorchJob expansion (``kubedra.sim.pytorchjobs``) against the released Kubeflow training-operator
v1.9.2 (``build.sh``), running against a control plane of the module's own with its CRD from the module go.mod pins:
for the example PyTorchJob and variants, the pods the real operator makes are compared with kubedra's, pod by pod
(names, labels, annotations, owners, containers' and init containers' resources and claims, the pods' resource
claims, restartPolicy and what else the scheduler reads).

The operator's validating webhook is not installed: v1.9.2 always manages its own serving certificate
(``pkg/cert``), issued for the Service ``training-operator.<namespace>.svc``, which the test API server cannot reach
by that name, so the webhook's refusals are checked against its source (``tests/sim/test_pytorchjob.py``)."""

from __future__ import annotations

import copy
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest
import yaml
from tests.controlplane.fixture import Component, ControlPlane, free_port
from tests.sigs import harness

from kubedra.objects.load import load_text
from kubedra.sim.scenario import build_scenario

pytestmark = pytest.mark.controlplane

HERE = Path(__file__).resolve().parent
BINARY = HERE / "bin" / "training-operator"
EXAMPLE = harness.EXAMPLES / "pytorchjob.yaml"
# v1.9.2's fixed certDir (pkg/cert), where a deployment mounts the certificate Secret: cert-controller's
# ensureCertsMounted waits for tls.crt there before the operator turns ready. The test stands in for that mount.
CERT_DIR = Path("/tmp/k8s-webhook-server/serving-certs")
OPERATOR_NAMESPACE = "kubeflow"  # where v1.9.2 keeps its certificate's Secret (KUBEFLOW_NAMESPACE)


def operator_module() -> Path:
    out = subprocess.run(["go", "list", "-mod=readonly", "-m", "-f", "{{.Dir}}", "github.com/kubeflow/training-operator"],
                         cwd=HERE, check=True, capture_output=True, text=True).stdout.strip()
    return Path(out)


@pytest.fixture(scope="module")
def plane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlane]:
    """The control plane with the PyTorchJob CRD and the operator (PyTorchJob only, every namespace); its certificate
    Secret and the webhook configuration it injects its CA into exist, empty, as the release's manifests make them."""
    harness.require(BINARY)
    tmp = tmp_path_factory.mktemp("training-operator")
    with harness.control_plane(tmp / "plane", ("job-controller",)) as started:
        harness.install_crds(started, [operator_module() / "manifests/base/crds/kubeflow.org_pytorchjobs.yaml"])
        started.request("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                                        "metadata": {"name": OPERATOR_NAMESPACE}})
        started.request("POST", f"/api/v1/namespaces/{OPERATOR_NAMESPACE}/secrets", {
            "apiVersion": "v1", "kind": "Secret", "metadata": {"name": "training-operator-webhook-cert"}})
        started.request("POST", "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations", {
            "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
            "metadata": {"name": "validator.training-operator.kubeflow.org"}, "webhooks": []})
        port, probe, metrics = free_port(), free_port(), free_port()
        args = [str(BINARY), f"--kubeconfig={started.kubeconfig}", "--enable-scheme=pytorchjob", "--namespace=",
                f"--webhook-server-port={port}", f"--health-probe-bind-address=127.0.0.1:{probe}",
                f"--metrics-bind-address=127.0.0.1:{metrics}", "--zap-devel=false"]
        component = Component(BINARY.name, args, tmp / "training-operator.log", f"http://127.0.0.1:{probe}/readyz")
        os.environ["KUBEFLOW_NAMESPACE"] = OPERATOR_NAMESPACE
        if not (CERT_DIR / "tls.crt").is_file():  # the trainer's test writes one there too (its certDir is the same)
            harness.serving_cert(CERT_DIR)
        try:
            component.start()
            harness.wait_ready(component, probe)
            yield started
        finally:
            os.environ.pop("KUBEFLOW_NAMESPACE", None)
            component.stop()


def example() -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(EXAMPLE.read_text()) if d]


def _job(docs: list[dict[str, Any]]) -> dict[str, Any]:
    found: dict[str, Any] = next(d for d in docs if d["kind"] == "PyTorchJob")
    return found


def workers_only() -> list[dict[str, Any]]:
    """No Master: worker 0 is the master (its job-role label), and no worker gets the init container."""
    docs = example()
    specs = _job(docs)["spec"]["pytorchReplicaSpecs"]
    del specs["Master"]
    specs["Worker"]["replicas"] = 2
    return docs


def exit_code_restart() -> list[dict[str, Any]]:
    """restartPolicy ExitCode on the workers (their pods get Never) and a template label kept under the operator's."""
    docs = example()
    worker = _job(docs)["spec"]["pytorchReplicaSpecs"]["Worker"]
    worker["restartPolicy"] = "ExitCode"
    worker["template"].setdefault("metadata", {}).setdefault("labels", {})["team"] = "ml"
    return docs


VARIANTS = {"example": example, "workers-only": workers_only, "exit-code": exit_code_restart}


def _shape(pod: dict[str, Any]) -> dict[str, Any]:
    meta = pod["metadata"]
    return {"name": meta["name"], "labels": meta.get("labels") or {}, "annotations": meta.get("annotations") or {},
            **harness.pod_fields(pod)}


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_the_pods_are_the_real_operators(plane: ControlPlane, variant: str) -> None:
    docs = VARIANTS[variant]()
    namespace = plane.create_namespace()
    for doc in docs:
        if doc["kind"] == "NodePool":
            continue
        body = {**copy.deepcopy(doc), "metadata": {**doc["metadata"], "namespace": namespace}}
        group = "/apis/resource.k8s.io/v1" if doc["kind"] == "ResourceClaimTemplate" else "/apis/kubeflow.org/v1"
        plane.request("POST", f"{group}/namespaces/{namespace}/{doc['kind'].lower()}s", body)
    scenario = build_scenario(load_text(yaml.safe_dump_all(harness.in_namespace(namespace, docs))))
    ours = sorted((_shape(msgspec.to_builtins(a.pod)) for a in scenario.workloads.arrivals), key=lambda s: s["name"])
    real = harness.listed(plane, f"/api/v1/namespaces/{namespace}/pods", len(ours), "pods")
    theirs = sorted((_shape(p) for p in real), key=lambda s: s["name"])
    assert ours == theirs
