"""The chart installed by the real helm into a real kube-apiserver (1.37), and its security checked with the real
authorizer and the real admission chain: the driver's ServiceAccount, with a token bound to a Pod on node A,
may write node A's ResourceSlices only (the chart's ValidatingAdmissionPolicy) and cannot read Secrets; the
exporter's may only read, and the real exporter syncs with it.

A control plane of its own (etcd and kube-apiserver, started once for this module): the chart creates the
cluster-wide DeviceClasses gpu.nvidia.com and friends, which other suites' tests on the shared ``control_plane``
create too; sharing one would make either depend on test order."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from tests.controlplane.fixture import ControlPlane, running_control_plane
from tests.helm.apiserver import NAMESPACE, POLICY, RELEASE, call, helm_in, token_for
from tests.helm.chart import CHART
from tests.runbook import RUNBOOK

pytestmark = [pytest.mark.controlplane, pytest.mark.slow]

SETTINGS = ["mig.enabled=true", "sharing.consumableShares=4", "deviceClasses.extendedResourceName=nvidia.com/gpu"]


@dataclass
class Installed:
    plane: ControlPlane
    helm: Path
    manifest: list[dict[str, Any]]


@pytest.fixture(scope="module")
def installed(helm: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Installed]:
    # The driver container is privileged (NVML, nvidia-smi): kube-apiserver refuses that unless started with
    # --allow-privileged=true, as every cluster that runs GPU drivers (kubeadm's default) is.
    workdir = tmp_path_factory.mktemp("helm-cp")
    with running_control_plane(workdir, only=("etcd", "kube-apiserver"), apiserver_args=["--allow-privileged=true"]) \
            as plane:
        sets = [a for s in SETTINGS for a in ("--set", s)]
        result = helm_in(plane, helm, "install", RELEASE, str(CHART), "--namespace", NAMESPACE, "--create-namespace",
                         *sets)
        assert result.returncode == 0, result.stdout + result.stderr
        manifest = helm_in(plane, helm, "get", "manifest", RELEASE, "--namespace", NAMESPACE)
        assert manifest.returncode == 0, manifest.stderr
        yield Installed(plane, helm, [d for d in yaml.safe_load_all(manifest.stdout) if d])


def _path(obj: dict[str, Any]) -> str:
    api_version, kind = obj["apiVersion"], obj["kind"]
    plural = {"ServiceAccount": "serviceaccounts", "ClusterRole": "clusterroles",
              "ClusterRoleBinding": "clusterrolebindings", "DaemonSet": "daemonsets", "Deployment": "deployments",
              "Service": "services", "ConfigMap": "configmaps", "DeviceClass": "deviceclasses",
              "ValidatingAdmissionPolicy": "validatingadmissionpolicies",
              "ValidatingAdmissionPolicyBinding": "validatingadmissionpolicybindings"}[kind]
    prefix = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
    namespace = obj["metadata"].get("namespace")
    scope = f"/namespaces/{namespace}" if namespace else ""
    return f"{prefix}{scope}/{plural}/{obj['metadata']['name']}"


def test_the_apiserver_accepted_every_object(installed: Installed) -> None:
    kinds = sorted({o["kind"] for o in installed.manifest})
    assert kinds == ["ClusterRole", "ClusterRoleBinding", "ConfigMap", "DaemonSet", "Deployment", "DeviceClass",
                     "Service", "ServiceAccount", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"]
    for obj in installed.manifest:
        stored = installed.plane.get(_path(obj))
        assert stored["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "Helm", _path(obj)
    classes = installed.plane.get("/apis/resource.k8s.io/v1/deviceclasses")["items"]
    assert sorted(c["metadata"]["name"] for c in classes) == ["gpu.nvidia.com", "gpu.shared.nvidia.com",
                                                              "mig.nvidia.com"]
    policy = installed.plane.get(f"/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies/{POLICY}")
    assert not policy.get("status", {}).get("typeChecking", {}).get("expressionWarnings"), policy["status"]


# ------------------------------------------------------------------------------------------- the driver's token

def _slice(node: str, name: str | None = None, driver: str = "gpu.nvidia.com") -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
        "metadata": {"name": name or f"{node}-{driver}"},
        "spec": {"driver": driver, "nodeName": node,
                 "pool": {"name": node, "generation": 1, "resourceSliceCount": 1}, "devices": [{"name": "gpu-0"}]},
    }


@pytest.fixture(scope="module")
def driver_on_a(installed: Installed) -> str:
    """A token of the driver's ServiceAccount bound to a driver Pod on node-a (no kubelet runs it)."""
    plane = installed.plane
    for node in ("node-a", "node-b"):
        plane.create_node(node, labels={"nvidia.com/gpu.present": "true"})
    pod = plane.create({
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "kubedra-driver-a", "namespace": NAMESPACE},
        "spec": {"nodeName": "node-a", "serviceAccountName": "kubedra-driver",
                 "containers": [{"name": "driver", "image": "kubedra:0.1.0"}]},
    })
    token = token_for(plane, "kubedra-driver", pod)
    # The policy is enforced once the apiserver's admission informers have it: wait for its first refusal.
    probe = _slice("node-b", "probe")

    def refused() -> bool:
        status, _ = call(plane, token, "POST", "/apis/resource.k8s.io/v1/resourceslices?dryRun=All", probe)
        return status == 403

    plane.wait_for(refused, timeout=30, what="the ValidatingAdmissionPolicy to be enforced")
    return token


SLICES = "/apis/resource.k8s.io/v1/resourceslices"


def _denied(name: str, node_from: str, verb: str, node_of: str) -> str:
    return (f'resourceslices.resource.k8s.io "{name}" is forbidden: ValidatingAdmissionPolicy \''
            f"{POLICY}' with binding '{POLICY}' denied request: the kubedra driver on "
            f"node {node_from} may not {verb} ResourceSlices of node {node_of}")



def test_driver_writes_its_own_nodes_slices(installed: Installed, driver_on_a: str) -> None:
    plane = installed.plane
    status, created = call(plane, driver_on_a, "POST", SLICES, _slice("node-a"))
    assert status == 201, created
    created["spec"]["devices"].append({"name": "gpu-1"})
    status, updated = call(plane, driver_on_a, "PUT", f"{SLICES}/node-a-gpu.nvidia.com", created)
    assert status == 200, updated
    status, listed = call(plane, driver_on_a, "GET", f"{SLICES}?fieldSelector=spec.nodeName=node-a")
    assert status == 200
    assert [s["metadata"]["name"] for s in listed["items"]] == ["node-a-gpu.nvidia.com"]
    status, answer = call(plane, driver_on_a, "DELETE", f"{SLICES}/node-a-gpu.nvidia.com")
    assert status == 200, answer


def test_driver_cannot_create_update_or_delete_another_nodes_slices(installed: Installed, driver_on_a: str) -> None:
    plane = installed.plane
    status, answer = call(plane, driver_on_a, "POST", SLICES, _slice("node-b"))
    assert (status, answer["message"]) == (403, _denied("node-b-gpu.nvidia.com", "node-a", "create", "node-b"))
    theirs = plane.create(_slice("node-b", "node-b-by-admin"))  # as node B's own driver would have
    moved = json.loads(json.dumps(theirs))
    moved["spec"]["devices"] = []
    status, answer = call(plane, driver_on_a, "PUT", f"{SLICES}/node-b-by-admin", moved)
    assert (status, answer["message"]) == (403, _denied("node-b-by-admin", "node-a", "update", "node-b"))
    status, answer = call(plane, driver_on_a, "DELETE", f"{SLICES}/node-b-by-admin")
    assert (status, answer["message"]) == (403, _denied("node-b-by-admin", "node-a", "delete", "node-b"))
    assert plane.get(f"{SLICES}/node-b-by-admin")["spec"]["devices"] == [{"name": "gpu-0"}]


def test_driver_cannot_write_another_drivers_slices_on_its_own_node(installed: Installed, driver_on_a: str) -> None:
    """Before, the policy checked only the node: the kubedra driver's pod on node A could create, rewrite and delete
    node A's slices of any driver (a NIC driver's, say). Now only gpu.nvidia.com's."""
    plane = installed.plane
    nic = "nic.example.com"
    status, answer = call(plane, driver_on_a, "POST", SLICES, _slice("node-a", driver=nic))
    assert (status, answer.get("message")) == (403, _foreign("node-a-nic.example.com", "create", nic))
    theirs = plane.create(_slice("node-a", "node-a-nic-by-admin", driver=nic))  # as the NIC driver would have
    rewritten = json.loads(json.dumps(theirs))
    rewritten["spec"]["devices"] = [{"name": "taken-over"}]
    status, answer = call(plane, driver_on_a, "PUT", f"{SLICES}/node-a-nic-by-admin", rewritten)
    assert (status, answer.get("message")) == (403, _foreign("node-a-nic-by-admin", "update", nic))
    renamed = json.loads(json.dumps(theirs))
    renamed["spec"]["driver"] = "gpu.nvidia.com"  # judging the new object is enough: spec.driver is immutable
    status, answer = call(plane, driver_on_a, "PUT", f"{SLICES}/node-a-nic-by-admin", renamed)
    assert status == 422
    assert 'spec.driver: Invalid value: "gpu.nvidia.com": field is immutable' in answer["message"]
    status, answer = call(plane, driver_on_a, "DELETE", f"{SLICES}/node-a-nic-by-admin")
    assert (status, answer.get("message")) == (403, _foreign("node-a-nic-by-admin", "delete", nic))
    assert plane.get(f"{SLICES}/node-a-nic-by-admin")["spec"] == theirs["spec"]


def _foreign(name: str, verb: str, driver: str) -> str:
    return (f'resourceslices.resource.k8s.io "{name}" is forbidden: ValidatingAdmissionPolicy \'{POLICY}\' with '
            f"binding '{POLICY}' denied request: the kubedra driver (gpu.nvidia.com) may not {verb} ResourceSlices of "
            f"driver {driver}")


def test_driver_cannot_take_over_another_nodes_slice(installed: Installed, driver_on_a: str) -> None:
    """An UPDATE is judged by the new object only, which is enough: spec.nodeName is immutable, so node B's slice
    cannot be rewritten into node A's (the apiserver's validation refuses it before admission)."""
    plane = installed.plane
    theirs = plane.create(_slice("node-b", "node-b-taken"))
    theirs["spec"]["nodeName"] = "node-a"
    status, answer = call(plane, driver_on_a, "PUT", f"{SLICES}/node-b-taken", theirs)
    assert status == 422
    assert 'spec.nodeName: Invalid value: "node-a": field is immutable' in answer["message"]


def test_driver_cannot_write_slices_without_a_node(installed: Installed, driver_on_a: str) -> None:
    plane = installed.plane
    pool = _slice("node-a", "no-node")
    del pool["spec"]["nodeName"]
    pool["spec"]["allNodes"] = True
    status, answer = call(plane, driver_on_a, "POST", SLICES, pool)
    assert (status, answer["message"]) == (403, 'resourceslices.resource.k8s.io "no-node" is forbidden: '
                                                f"ValidatingAdmissionPolicy '{POLICY}' with binding '{POLICY}' "
                                                "denied request: the kubedra driver on node node-a may not create "
                                                "ResourceSlices without a node")


def test_a_token_not_bound_to_a_pod_on_a_node_writes_nothing(installed: Installed, driver_on_a: str) -> None:
    plane = installed.plane
    unbound = token_for(plane, "kubedra-driver")
    status, answer = call(plane, unbound, "POST", SLICES, _slice("node-a"))
    assert status == 403
    assert answer["message"].endswith("denied request: the kubedra driver may write ResourceSlices only with a token "
                                      "bound to a pod on a node (no node name in its credentials)")


def test_driver_reads_no_secrets_and_writes_no_pods(installed: Installed, driver_on_a: str) -> None:
    plane = installed.plane
    user = f"system:serviceaccount:{NAMESPACE}:kubedra-driver"
    status, answer = call(plane, driver_on_a, "GET", f"/api/v1/namespaces/{NAMESPACE}/secrets")
    assert (status, answer["message"]) == (403, f'secrets is forbidden: User "{user}" cannot list resource "secrets" '
                                                f'in API group "" in the namespace "{NAMESPACE}"')
    status, _ = call(plane, driver_on_a, "GET", "/api/v1/secrets")
    assert status == 403
    status, _ = call(plane, driver_on_a, "GET", "/api/v1/nodes/node-a")
    assert status == 200
    status, _ = call(plane, driver_on_a, "DELETE", f"/api/v1/namespaces/{NAMESPACE}/pods/kubedra-driver-a")
    assert status == 403


# ------------------------------------------------------------------------------------------- the exporter's token

READS = ["/api/v1/nodes", "/api/v1/pods", "/apis/resource.k8s.io/v1/deviceclasses", SLICES,
         "/apis/resource.k8s.io/v1/resourceclaims", "/apis/resource.k8s.io/v1/resourceclaimtemplates",
         "/apis/resource.k8s.io/v1/devicetaintrules"]


def test_exporter_reads_and_writes_nothing(installed: Installed) -> None:
    plane = installed.plane
    token = token_for(plane, "kubedra-exporter")
    for path in READS:
        assert call(plane, token, "GET", path)[0] == 200, path
        assert call(plane, token, "GET", f"{path}?watch=true&timeoutSeconds=1")[0] == 200, path
    writes = [("POST", SLICES, _slice("node-a", "by-exporter")),
              ("POST", "/apis/resource.k8s.io/v1/deviceclasses",
               {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "x"}, "spec": {}}),
              ("POST", f"/api/v1/namespaces/{NAMESPACE}/configmaps",
               {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}),
              ("DELETE", "/apis/resource.k8s.io/v1/deviceclasses/gpu.nvidia.com", None),
              ("GET", f"/api/v1/namespaces/{NAMESPACE}/secrets", None)]
    for method, path, body in writes:
        status, answer = call(plane, token, method, path, body)
        assert status == 403, (method, path, answer)
        assert "is forbidden: User \"system:serviceaccount:kubedra:kubedra-exporter\"" in answer["message"]


def test_the_real_exporter_syncs_with_the_charts_rbac(installed: Installed, tmp_path: Path) -> None:
    """`kubedra exporter --once` as the exporter's ServiceAccount: every kind it watches is readable."""
    plane = installed.plane
    kubeconfig = plane.kubeconfig_for(token_for(plane, "kubedra-exporter"), "chart-exporter")
    done = subprocess.run([sys.executable, "-m", "kubedra", "exporter", "--kubeconfig", str(kubeconfig), "--once",
                           "--sync-timeout", "30"], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert "kubedra_exporter_synced 1.0" in done.stdout


# ------------------------------------------------------------------------------------------- the device-plugin guard

def test_upgrade_refused_beside_a_running_device_plugin(installed: Installed) -> None:
    plane = installed.plane
    body = {"apiVersion": "apps/v1", "kind": "DaemonSet",
            "metadata": {"name": "nvidia-device-plugin-daemonset", "namespace": "gpu-operator"},
            "spec": {"selector": {"matchLabels": {"app": "dp"}},
                     "template": {"metadata": {"labels": {"app": "dp"}},
                                  "spec": {"containers": [{"name": "dp", "image": "nvcr.io/nvidia/k8s-device-plugin"}]}}}}
    plane.request("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                                 "metadata": {"name": "gpu-operator"}})
    plane.request("POST", "/apis/apps/v1/namespaces/gpu-operator/daemonsets", body)
    try:
        sets = [a for s in SETTINGS for a in ("--set", s)]
        refused = helm_in(plane, installed.helm, "upgrade", RELEASE, str(CHART), "-n", NAMESPACE, *sets)
        assert refused.returncode != 0
        assert ("DaemonSet gpu-operator/nvidia-device-plugin-daemonset (the NVIDIA device plugin) is in the cluster"
                in refused.stderr), refused.stderr
        # The runbook shows this refusal (for helm install): the same words, from the same template line.
        error = refused.stderr.strip().splitlines()[-1].split("execution error at ", 1)[1]
        assert f"Error: INSTALLATION FAILED: execution error at {error}\n" in RUNBOOK.read_text()
        allowed = helm_in(plane, installed.helm, "upgrade", RELEASE, str(CHART), "-n", NAMESPACE, *sets,
                          "--set", "allowBesideDevicePlugin=true")
        assert allowed.returncode == 0, allowed.stderr
    finally:
        plane.request("DELETE", "/apis/apps/v1/namespaces/gpu-operator/daemonsets/nvidia-device-plugin-daemonset")
