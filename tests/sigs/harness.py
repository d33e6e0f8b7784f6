"""What the JobSet and LeaderWorkerSet checks share: the released controllers (``build.sh``) run against a control
plane of the test module's own, with their CRDs and webhook configurations read from the modules go.mod pins (Go's
module cache), the webhooks served over TLS with a self-signed certificate for 127.0.0.1 and registered with the
API server by URL (the deployments' kustomize patches, which add the pod webhooks' object selectors, applied), so
that the objects are defaulted, validated and mutated as in a cluster that runs the release."""

from __future__ import annotations

import copy
import os
import shutil
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import yaml
from tests.controlplane.fixture import Component, ControlPlane, free_port, running_control_plane

HERE = Path(__file__).resolve().parent
BIN = HERE / "bin"
EXAMPLES = HERE.parents[1] / "examples" / "workloads"
WAIT = 60.0
SUFFIX = 5  # the random suffix of a Job's pod name

# kube-apiserver's DefaultTolerationSeconds admission adds these to every pod; no controller does
ADMITTED = [{"key": f"node.kubernetes.io/{key}", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}
            for key in ("not-ready", "unreachable")]


HTTP_CONFLICT = 409


def require(binary: Path) -> None:
    """Skip (CI=true: fail) where the controller is not built or Go cannot find its module."""
    if not binary.is_file():
        reason = f"{binary.name} is not built ({binary}): run tests/sigs/build.sh (scripts/test does)"
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI=true: {reason}")
        pytest.skip(reason)
    if shutil.which("go") is None:
        pytest.skip("go is not on PATH: the controller's CRDs are read from Go's module cache")


def module_dir(module: str) -> Path:
    out = subprocess.run(["go", "list", "-mod=readonly", "-m", "-f", "{{.Dir}}", module], cwd=HERE, check=True,
                         capture_output=True, text=True).stdout.strip()
    return Path(out)


def serving_cert(directory: Path) -> bytes:
    """A self-signed certificate for 127.0.0.1 (tls.crt, tls.key in ``directory``, as controller-runtime's webhook
    server reads them); returns the certificate, the webhooks' caBundle."""
    directory.mkdir(parents=True, exist_ok=True)
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1",
                    "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(directory / "tls.key"),
                    "-out", str(directory / "tls.crt")], check=True, capture_output=True)
    return (directory / "tls.crt").read_bytes()


def install_crds(plane: ControlPlane, files: list[Path]) -> None:
    plane.install_crds([yaml.safe_load(file.read_text()) for file in files], timeout=WAIT)


def install_webhooks(plane: ControlPlane, webhook_dir: Path, port: int, ca: bytes,
                     patch_names: tuple[str, str] = ("mutating-patch.yaml", "validating-patch.yaml")) -> None:
    """``manifests.yaml`` with the kustomization's JSON patches applied (``patch_names``: the mutating and the
    validating configurations' files, in ``patches/`` where there is one), each service reference turned into the
    URL the controller serves."""
    import base64

    bundle = base64.b64encode(ca).decode()
    patches_dir = webhook_dir / "patches" if (webhook_dir / "patches").is_dir() else webhook_dir
    for doc in yaml.safe_load_all((webhook_dir / "manifests.yaml").read_text()):
        if not doc:
            continue
        kind = doc["kind"]
        patch = patches_dir / patch_names[0 if kind.startswith("Mutating") else 1]
        for op in yaml.safe_load(patch.read_text()) if patch.is_file() else []:
            _apply(doc, op)
        for hook in doc["webhooks"]:
            path = hook["clientConfig"]["service"]["path"]
            hook["clientConfig"] = {"url": f"https://127.0.0.1:{port}{path}", "caBundle": bundle}
        plural = "mutatingwebhookconfigurations" if kind.startswith("Mutating") else "validatingwebhookconfigurations"
        plane.request("POST", f"/apis/admissionregistration.k8s.io/v1/{plural}", doc)


def _apply(doc: dict[str, Any], op: dict[str, Any]) -> None:
    """One JSON patch operation, ``replace`` or ``add`` (what the releases' kustomizations use)."""
    assert op["op"] in ("replace", "add"), op
    *parents, last = op["path"].strip("/").split("/")
    node: Any = doc
    for key in parents:
        node = node[int(key)] if isinstance(node, list) else node[key]
    if isinstance(node, list):
        node[int(last)] = op["value"]
    else:
        node[last] = op["value"]


@contextmanager
def control_plane(tmp: Path, controllers: tuple[str, ...]) -> Iterator[ControlPlane]:
    """etcd, kube-apiserver and kube-controller-manager with only ``controllers`` (nothing schedules)."""
    only = ("etcd", "kube-apiserver", "kube-controller-manager")
    with running_control_plane(tmp, only=only, controllers=controllers) as plane:
        yield plane


@contextmanager
def controller(plane: ControlPlane, tmp: Path, binary: Path, config_api: str, module: Path, crds: list[Path],
               webhook_dir: Path) -> Iterator[None]:
    """The controller with its CRDs and webhooks installed: internal cert management and leader election off,
    webhooks on 127.0.0.1 with ``serving_cert``, metrics off, probes on a free port; ready once /readyz answers."""
    install_crds(plane, crds)
    certs = tmp / "certs"
    ca = serving_cert(certs)
    port, probe = free_port(), free_port()
    config = {
        "apiVersion": config_api, "kind": "Configuration",
        "internalCertManagement": {"enable": False},
        "leaderElection": {"leaderElect": False},
        "webhook": {"port": port, "host": "127.0.0.1", "certDir": str(certs)},
        "metrics": {"bindAddress": "0"},
        "health": {"healthProbeBindAddress": f"127.0.0.1:{probe}"},
    }
    (tmp / "config.yaml").write_text(yaml.safe_dump(config))
    args = [str(binary), f"--kubeconfig={plane.kubeconfig}", f"--config={tmp / 'config.yaml'}", "--zap-devel=false"]
    component = Component(binary.name, args, tmp / f"{binary.name}.log", f"http://127.0.0.1:{probe}/readyz")
    os.environ.pop("ENABLE_WEBHOOKS", None)
    component.start()
    try:
        wait_ready(component, probe)
        install_webhooks(plane, webhook_dir, port, ca)
        yield
    finally:
        component.stop()


def wait_ready(component: Component, port: int) -> None:
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        if not component.running():
            raise AssertionError(f"{component.name} exited:\n{component.log_tail()}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.2)
    raise AssertionError(f"{component.name} not ready after {WAIT}s:\n{component.log_tail()}")


def in_namespace(namespace: str, docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The documents with the namespace set on the namespaced ones (NodePools are kubedra's and have none)."""
    out = [copy.deepcopy(doc) for doc in docs]
    for doc in out:
        if doc["apiVersion"] != "kubedra.io/v1alpha1":
            doc["metadata"]["namespace"] = namespace
    return out


PATHS = {"Job": "/apis/batch/v1", "ResourceClaimTemplate": "/apis/resource.k8s.io/v1",
         "JobSet": "/apis/jobset.x-k8s.io/v1alpha2", "LeaderWorkerSet": "/apis/leaderworkerset.x-k8s.io/v1"}


def apply(plane: ControlPlane, docs: list[dict[str, Any]]) -> None:
    for doc in docs:
        if doc["apiVersion"] == "kubedra.io/v1alpha1":
            continue
        plural = doc["kind"].lower() + "s"
        plane.request("POST", f"{PATHS[doc['kind']]}/namespaces/{doc['metadata']['namespace']}/{plural}", doc)


def listed(plane: ControlPlane, path: str, count: int, what: str) -> list[dict[str, Any]]:
    """The objects at ``path`` once ``count`` exist (and a moment more: none beyond those)."""

    def enough() -> list[dict[str, Any]] | None:
        items: list[dict[str, Any]] = plane.get(path)["items"]
        return items if len(items) >= count else None

    plane.wait_for(enough, timeout=WAIT, interval=0.5, what=f"{count} {what}")
    time.sleep(2)
    items: list[dict[str, Any]] = plane.get(path)["items"]
    assert len(items) == count, [i["metadata"]["name"] for i in items]
    return items


def make_ready(plane: ControlPlane, pod: dict[str, Any]) -> None:
    """What a kubelet writes once the pod's containers run and pass their probes: phase Running, Ready."""
    meta = pod["metadata"]
    status = {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}
    plane.request("PATCH", f"/api/v1/namespaces/{meta['namespace']}/pods/{meta['name']}/status", {"status": status},
                  content_type="application/merge-patch+json")


def bind(plane: ControlPlane, pod: dict[str, Any], node: str) -> None:
    """What kube-scheduler writes: the pod's binding to ``node``."""
    meta = pod["metadata"]
    body = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": meta["name"]},
            "target": {"apiVersion": "v1", "kind": "Node", "name": node}}
    plane.request("POST", f"/api/v1/namespaces/{meta['namespace']}/pods/{meta['name']}/binding", body)


def quantities(resources: dict[str, Any] | None) -> dict[str, Any]:
    """Requests, limits and claims; a request left out is its limit (SetDefaults_Pod)."""
    resources = dict(resources or {})
    if resources.get("limits"):
        resources["requests"] = {**resources["limits"], **resources.get("requests", {})}
    return {k: resources[k] for k in ("requests", "limits", "claims") if resources.get(k)}


def containers(items: list[dict[str, Any]] | None) -> list[tuple[str, dict[str, Any]]]:
    return [(c["name"], quantities(c.get("resources"))) for c in items or []]


def get_or_none(plane: ControlPlane, path: str) -> dict[str, Any] | None:
    try:
        return plane.get(path)
    except urllib.error.HTTPError as error:
        if error.code == 404:
            return None
        raise


def pod_fields(pod: dict[str, Any]) -> dict[str, Any]:
    """What both comparisons read of a pod besides its name, labels and annotations: owners, containers' resources,
    claims, and what the scheduler reads (the API server's default tolerations left out)."""
    meta, spec = pod["metadata"], pod["spec"]
    return {
        "owners": [(o["apiVersion"], o["kind"], o["name"], o.get("controller"), o.get("blockOwnerDeletion"))
                   for o in meta.get("ownerReferences", [])],
        "containers": containers(spec.get("containers")),
        "initContainers": containers(spec.get("initContainers")),
        "resourceClaims": spec.get("resourceClaims", []),
        "nodeSelector": spec.get("nodeSelector", {}),
        "tolerations": [t for t in spec.get("tolerations", []) if t not in ADMITTED],
        "affinity": spec.get("affinity"),
        "restartPolicy": spec.get("restartPolicy"),
    }
