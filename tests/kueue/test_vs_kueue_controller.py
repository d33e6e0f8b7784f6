"""kubedra's Kueue admission (``sim.kueue``) against the released controller manager, sigs.k8s.io/kueue v0.17.0
(``tests/kueue/build.sh``), on the test control plane's etcd and kube-apiserver (no scheduler, no
kube-controller-manager: admission needs neither). Its CRDs come from the module go.mod pins; its Job and queue webhooks are served over TLS with a self-signed
certificate (``tests/sigs/harness``), so a labelled Job is made suspended as in a cluster. For each scenario the same
ResourceFlavors, ClusterQueue, LocalQueue and Jobs go to both; the Jobs the controller unsuspends (its Workloads'
QuotaReserved) and the node selectors it writes into their templates must equal kubedra's admissions at t=0.

Jobs are created 1.1 s apart: a Workload's creationTimestamp has whole seconds, and Kueue breaks a tie by UID."""

from __future__ import annotations

import base64
import copy
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from tests.controlplane.fixture import Component, ControlPlane, free_port, running_control_plane
from tests.sigs import harness

from kubedra.objects.load import load_text
from kubedra.sim.scenario import build_scenario
from kubedra.sim.simulate import Options, simulate

pytestmark = pytest.mark.controlplane

HERE = Path(__file__).resolve().parent
BINARY = HERE / "bin" / "kueue-controller"
MODULE = "sigs.k8s.io/kueue"
V1B2 = "kueue.x-k8s.io/v1beta2"
QUEUE = "kueue.x-k8s.io/queue-name"
METRICS_CERTS = Path("/etc/kueue/metrics/certs")
HOOKS = ("batch-v1-job", "kueue-x-k8s-io")  # the webhooks this check needs: Jobs' and the queue objects'


def _webhooks(plane: ControlPlane, module: Path, port: int, ca: bytes) -> None:
    bundle = base64.b64encode(ca).decode()
    for doc in yaml.safe_load_all((module / "config/components/webhook/manifests.yaml").read_text()):
        if not doc:
            continue
        doc["webhooks"] = [h for h in doc["webhooks"] if any(k in h["clientConfig"]["service"]["path"] for k in HOOKS)]
        for hook in doc["webhooks"]:
            hook["clientConfig"] = {"url": f"https://127.0.0.1:{port}{hook['clientConfig']['service']['path']}",
                                    "caBundle": bundle}
        plural = "mutatingwebhookconfigurations" if doc["kind"].startswith("Mutating") else \
            "validatingwebhookconfigurations"
        plane.request("POST", f"/apis/admissionregistration.k8s.io/v1/{plural}", doc)


def _metrics_certs(certs: Path) -> Path | None:
    """v0.17's manager reads its metrics server's certificate from a fixed path, ``/etc/kueue/metrics/certs``, when
    its internal certificate management is off (``cmd/kueue/main.go``), and exits without one: the self-signed one is
    put there (metrics are off, so it serves nothing). Returns the directory made (removed after), None if it was
    there already; skips where it cannot be written."""
    target = METRICS_CERTS
    if (target / "tls.crt").is_file():
        return None
    top = next((p for p in [target, *target.parents] if p.exists()), None)
    made = next((p for p in reversed([target, *target.parents]) if not p.exists()), None)
    if top is None or not os.access(top, os.W_OK):
        pytest.skip(f"{target} cannot be written: Kueue v0.17 reads its metrics certificate from there")
    target.mkdir(parents=True, exist_ok=True)
    for name in ("tls.crt", "tls.key"):
        shutil.copyfile(certs / name, target / name)
    return made


@pytest.fixture(scope="module")
def plane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlane]:
    if not BINARY.is_file():
        reason = f"{BINARY.name} is not built ({BINARY}): run tests/kueue/build.sh (scripts/test does)"
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI=true: {reason}")
        pytest.skip(reason)
    harness.require(BINARY)  # go on PATH: the CRDs are read from Go's module cache
    module = Path(subprocess.run(["go", "list", "-mod=readonly", "-m", "-f", "{{.Dir}}", MODULE], cwd=HERE, check=True,
                                 capture_output=True, text=True).stdout.strip())
    tmp = tmp_path_factory.mktemp("kueue")
    with running_control_plane(tmp_path_factory.mktemp("kueue-cp"), only=("etcd", "kube-apiserver")) as cp:
        crds = sorted((module / "config/components/crd/bases").glob("*.yaml"))
        harness.install_crds(cp, crds)
        certs = tmp / "certs"
        ca = harness.serving_cert(certs)
        made = _metrics_certs(certs)
        port, probe = free_port(), free_port()
        config = {
            "apiVersion": "config.kueue.x-k8s.io/v1beta2", "kind": "Configuration",
            "internalCertManagement": {"enable": False}, "leaderElection": {"leaderElect": False},
            "webhook": {"port": port, "host": "127.0.0.1", "certDir": str(certs)},
            "metrics": {"bindAddress": "0"}, "health": {"healthProbeBindAddress": f"127.0.0.1:{probe}"},
            "integrations": {"frameworks": ["batch/job"]},
        }
        (tmp / "config.yaml").write_text(yaml.safe_dump(config))
        args = [str(BINARY), f"--kubeconfig={cp.kubeconfig}", f"--config={tmp / 'config.yaml'}", "--zap-devel=false",
                "--feature-gates=VisibilityOnDemand=false"]  # its API server reads certificates from /visibility
        component = Component(BINARY.name, args, tmp / "kueue.log", f"http://127.0.0.1:{probe}/readyz")
        os.environ.pop("ENABLE_WEBHOOKS", None)
        component.start()
        try:
            harness.wait_ready(component, probe)
            _webhooks(cp, module, port, ca)
            yield cp
        finally:
            component.stop()
            if made is not None:
                shutil.rmtree(made)


def flavor(name: str, labels: dict[str, str]) -> dict[str, Any]:
    return {"apiVersion": V1B2, "kind": "ResourceFlavor", "metadata": {"name": name}, "spec": {"nodeLabels": labels}}


def queues(prefix: str, namespace: str, flavors: list[tuple[str, str]], strategy: str) -> list[dict[str, Any]]:
    """A ClusterQueue ``<prefix>`` (one group: cpu and nvidia.com/gpu; ``flavors``: (name, GPU quota)) and a
    LocalQueue ``lq`` for it in ``namespace``."""
    group = {"coveredResources": ["cpu", "nvidia.com/gpu"], "flavors": [
        {"name": f"{prefix}-{name}", "resources": [{"name": "cpu", "nominalQuota": "64"},
                                                   {"name": "nvidia.com/gpu", "nominalQuota": gpus}]}
        for name, gpus in flavors]}
    return [
        *(flavor(f"{prefix}-{name}", {"pool": name}) for name, _ in flavors),
        {"apiVersion": V1B2, "kind": "ClusterQueue", "metadata": {"name": prefix},
         "spec": {"namespaceSelector": {}, "queueingStrategy": strategy, "resourceGroups": [group]}},
        {"apiVersion": V1B2, "kind": "LocalQueue", "metadata": {"name": "lq", "namespace": namespace},
         "spec": {"clusterQueue": prefix}},
    ]


def job(name: str, namespace: str, gpus: int, parallelism: int = 1) -> dict[str, Any]:
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": name, "namespace": namespace, "labels": {QUEUE: "lq"}},
            "spec": {"parallelism": parallelism, "completions": parallelism, "template": {"spec": {
                "restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox", "resources": {
                    "requests": {"cpu": "1"}, "limits": {"nvidia.com/gpu": str(gpus)}}}]}}}}


def real(plane: ControlPlane, docs: list[dict[str, Any]]) -> dict[str, dict[str, str]]:
    """Job name -> its template's node selector, for each Job the controller unsuspended."""
    jobs = [d for d in docs if d["kind"] == "Job"]
    for doc in docs:
        if doc["kind"] == "Job":
            continue
        plural = doc["kind"].lower() + "s"
        ns = doc["metadata"].get("namespace")
        plane.request("POST", f"/apis/{V1B2}/" + (f"namespaces/{ns}/" if ns else "") + plural, doc)
    time.sleep(1.0)  # the controller's caches see the queues before the first Workload
    for doc in jobs:
        plane.request("POST", f"/apis/batch/v1/namespaces/{doc['metadata']['namespace']}/jobs", doc)
        time.sleep(1.1)
    namespace = jobs[0]["metadata"]["namespace"]

    def settled() -> list[dict[str, Any]] | None:
        items: list[dict[str, Any]] = plane.get(f"/apis/{V1B2}/namespaces/{namespace}/workloads")["items"]
        decided = [w for w in items if any(c["type"] == "QuotaReserved"
                                           for c in w.get("status", {}).get("conditions", []))]
        return items if len(items) == len(jobs) and decided else None

    # Every Workload made and the first decided; then a moment for the rest (StrictFIFO never looks at a Workload
    # behind a head that does not fit: it has no status) and for the Job reconciler to unsuspend the admitted ones.
    plane.wait_for(settled, timeout=harness.WAIT, interval=0.5, what="the Workloads, one with QuotaReserved")
    time.sleep(3)
    out = {}
    for item in plane.get(f"/apis/batch/v1/namespaces/{namespace}/jobs")["items"]:
        assert item["metadata"]["labels"][QUEUE] == "lq"
        if not item["spec"].get("suspend"):
            out[item["metadata"]["name"]] = item["spec"]["template"]["spec"].get("nodeSelector", {})
    return out


def kubedra(docs: list[dict[str, Any]]) -> dict[str, dict[str, str]]:
    docs = copy.deepcopy(docs)
    scenario = build_scenario(load_text(yaml.safe_dump_all(docs)))
    result = simulate(scenario, Options(fragmentation_samples=0))
    admitted = {e.object.rsplit("/", 1)[1] for e in result.events if e.type == "Admitted" and e.time == 0.0}
    jobs = {j.name: j for j in scenario.workloads.jobs}
    out = {}
    for record in result.state.pods.values():
        name = record.owner.rsplit("/", 1)[1]
        if name in admitted:
            out[name] = dict(record.pod.spec.node_selector)
    assert set(out) == admitted and admitted <= set(jobs)
    return out


SCENARIOS = {
    # 8 GPUs of quota, three 4-GPU Jobs: the first two
    "two-of-three": ([("default", "8")], "BestEffortFIFO", [("a", 4, 1), ("b", 4, 1), ("c", 4, 1)]),
    # two flavors: the first's 4 GPUs, then the second's
    "two-flavors": ([("on-demand", "4"), ("spot", "4")], "BestEffortFIFO", [("a", 4, 1), ("b", 2, 2), ("c", 1, 1)]),
    # a head that never fits (12 GPUs of 8): BestEffortFIFO admits the Job behind it, StrictFIFO nothing
    "best-effort": ([("default", "8")], "BestEffortFIFO", [("big", 4, 3), ("small", 2, 1)]),
    "strict": ([("default", "8")], "StrictFIFO", [("big", 4, 3), ("small", 2, 1)]),
}


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_the_jobs_kueue_admits_at_once_and_their_node_selectors_equal_kubedras(plane: ControlPlane,
                                                                              name: str) -> None:
    flavors, strategy, shapes = SCENARIOS[name]
    namespace = plane.create_namespace("kueue")
    prefix = f"{namespace}-{name}"
    docs = [*queues(prefix, namespace, flavors, strategy),
            *(job(job_name, namespace, gpus, parallelism) for job_name, gpus, parallelism in shapes)]
    assert real(plane, docs) == kubedra(docs)
