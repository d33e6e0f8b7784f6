"""``validate --kubeconfig`` (issue 40): references the files leave unresolved are looked up in the live cluster —
a claim's DeviceClass, a pod's claim or claim template in its namespace — read only; what the cluster lacks stays a
warning (a finding with --strict-references)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from tests.controlplane.fixture import ControlPlane
from tests.kube import builders as b

from kubedra.cli import main

pytestmark = pytest.mark.controlplane


def _validate(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    capsys.readouterr()
    code = main(["validate", *argv])
    out, err = capsys.readouterr()
    return code, out + err


def test_references_resolve_against_the_live_cluster(control_plane: ControlPlane, namespace: str, tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    device_class = f"{namespace}-gpu"
    control_plane.create(b.device_class(device_class, f"{namespace}.example.com"))
    control_plane.create(b.template("one-gpu", namespace, device_class))
    inputs = tmp_path / "inputs.yaml"
    inputs.write_text(yaml.safe_dump_all([
        b.claim("mine", namespace, device_class),
        b.pod("uses-template", namespace, template_name="one-gpu"),
        b.pod("uses-missing", namespace, template_name="not-there"),
    ]))
    code, offline = _validate(capsys, "-f", str(inputs))
    assert code == 0
    assert f'Not found: "{device_class}": no DeviceClass of this name in the inputs' in offline
    assert 'Not found: "one-gpu"' in offline and 'Not found: "not-there"' in offline

    kubeconfig = str(control_plane.kubeconfig)
    code, live = _validate(capsys, "-f", str(inputs), "--kubeconfig", kubeconfig)
    assert code == 0, live
    assert f'"{device_class}"' not in live and '"one-gpu"' not in live
    assert 'Not found: "not-there": no ResourceClaimTemplate of this name in the inputs or the cluster' in live
    assert "1 warning" in live

    code, strict = _validate(capsys, "-f", str(inputs), "--kubeconfig", kubeconfig, "--strict-references")
    assert code == 1 and '"not-there"' in strict and '"one-gpu"' not in strict


def test_a_template_in_another_namespace_of_the_cluster_is_named(control_plane: ControlPlane, namespace: str,
                                                                 tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    control_plane.create(b.template("shared-name", namespace, "gpu.example.com"))
    inputs = tmp_path / "pod.yaml"
    inputs.write_text(yaml.safe_dump(b.pod("p", "default", template_name="shared-name")))
    code, out = _validate(capsys, "-f", str(inputs), "--kubeconfig", str(control_plane.kubeconfig))
    assert code == 0
    assert f"exists in namespace {namespace}, not in the pod's namespace default" in out


def test_an_unreachable_cluster_is_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    inputs = tmp_path / "pod.yaml"
    inputs.write_text(yaml.safe_dump(b.pod("p", "default")))
    code, out = _validate(capsys, "-f", str(inputs), "--kubeconfig", str(tmp_path / "missing"))
    assert code == 2 and "not found" in out


def test_a_server_dry_run_reports_what_the_server_refuses_and_stores_nothing(
        control_plane: ControlPlane, namespace: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    device_class = f"{namespace}-gpu"
    control_plane.create(b.device_class(device_class, f"{namespace}.example.com"))
    inputs = tmp_path / "inputs.yaml"
    inputs.write_text(yaml.safe_dump_all([
        b.claim("fine", namespace, device_class),
        b.pod("nowhere", f"{namespace}-absent"),  # a namespace the cluster lacks: only the server knows
        {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": namespace},
         "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
                  "template": {"metadata": {"labels": {"app": "web"}},
                               "spec": {"containers": [{"name": "c", "image": "x"}]}}}},
        {"apiVersion": "kubedra.io/v1alpha1", "kind": "NodePool", "metadata": {"name": "l4"},
         "spec": {"count": 1, "gpu": {"model": "L4", "count": 1}}},
    ]))
    code, offline = _validate(capsys, "-f", str(inputs))
    assert code == 0, offline
    code, out = _validate(capsys, "-f", str(inputs), "--kubeconfig", str(control_plane.kubeconfig),
                          "--dry-run", "server")
    assert code == 1, out
    refused = [line for line in out.splitlines() if "the API server refuses it (dry run)" in line]
    assert len(refused) == 1 and "Pod/nowhere" in refused[0] and f'"{namespace}-absent" not found' in refused[0]
    assert "NodePool/l4: not sent to the server: NodePool is kubedra's own kind" in out
    stored = control_plane.get(f"/apis/resource.k8s.io/v1/namespaces/{namespace}/resourceclaims")["items"]
    assert stored == []
    assert control_plane.get(f"/apis/apps/v1/namespaces/{namespace}/deployments")["items"] == []
    code, out = _validate(capsys, "-f", str(inputs), "--dry-run", "maybe")
    assert code == 2 and "--dry-run" in out
