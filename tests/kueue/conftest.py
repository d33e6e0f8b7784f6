"""The real Kueue controller manager for ``tests/kueue`` (one per package run): sigs.k8s.io/kueue v0.17.0
(``tests/kueue/build.sh``) on the test control plane's etcd and kube-apiserver, its CRDs from the module go.mod pins
with the JobSet CRD and KubeRay's RayCluster and RayJob CRDs; its batch/job, jobset, rayjob and pod integrations on,
their webhooks and the queue webhooks served over TLS with a self-signed certificate (``tests/sigs/harness``). Shared
objects (ResourceFlavors, ClusterQueues, LocalQueues) are made by ``tests.kueue.queues``."""

from __future__ import annotations

import base64
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from tests.controlplane.fixture import Component, ControlPlane, free_port, running_control_plane
from tests.kueue.queues import JOBSET_MODULE, MODULE, RAY_MODULE
from tests.sigs import harness

HERE = Path(__file__).resolve().parent
BINARY = HERE / "bin" / "kueue-controller"
METRICS_CERTS = Path("/etc/kueue/metrics/certs")
# the webhooks this check needs (by path: /mutate-batch-v1-job, ..., /mutate--v1-pod)
HOOKS = ("batch-v1-job", "jobset-x-k8s-io", "kueue-x-k8s-io", "ray-io-v1-rayjob", "--v1-pod")
FRAMEWORKS = ["batch/job", "jobset.x-k8s.io/jobset", "ray.io/rayjob", "pod"]


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


@pytest.fixture(scope="package")
def plane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlane]:
    if not BINARY.is_file():
        reason = f"{BINARY.name} is not built ({BINARY}): run tests/kueue/build.sh (scripts/test does)"
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI=true: {reason}")
        pytest.skip(reason)
    harness.require(BINARY)  # go on PATH: the CRDs are read from Go's module cache
    module, jobset, ray = (Path(subprocess.run(["go", "list", "-mod=readonly", "-m", "-f", "{{.Dir}}", name],
                                               cwd=HERE, check=True, capture_output=True, text=True).stdout.strip())
                           for name in (MODULE, JOBSET_MODULE, RAY_MODULE))
    tmp = tmp_path_factory.mktemp("kueue")
    with running_control_plane(tmp_path_factory.mktemp("kueue-cp"), only=("etcd", "kube-apiserver")) as cp:
        crds = [*sorted((module / "config/components/crd/bases").glob("*.yaml")),
                jobset / "config/components/crd/bases/jobset.x-k8s.io_jobsets.yaml",
                *(ray / f"config/crd/bases/ray.io_{plural}.yaml" for plural in ("rayclusters", "rayjobs"))]
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
            "integrations": {"frameworks": FRAMEWORKS},
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
