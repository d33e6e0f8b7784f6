"""``validate`` on the manifests people have: ``kubectl get -o yaml`` Lists, NVIDIA's classes, custom resources, and
references to what lives elsewhere (warnings; findings with ``--strict-references``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kubedra.cli import main

LIST = """apiVersion: v1
kind: List
items:
- apiVersion: resource.k8s.io/v1
  kind: ResourceClaim
  metadata: {name: imex, namespace: default}
  spec:
    devices:
      requests: [{name: r, exactly: {deviceClassName: imex.nvidia.com}}]
- apiVersion: resource.k8s.io/v1
  kind: ResourceClaimTemplate
  metadata: {name: channel, namespace: default}
  spec:
    spec:
      devices:
        requests:
        - {name: r, exactly: {deviceClassName: compute-domain-default-channel.nvidia.com}}
        - {name: s, exactly: {deviceClassName: gpu.shared.nvidia.com}}
- apiVersion: v1
  kind: Pod
  metadata: {name: p, namespace: default}
  spec:
    containers: [{name: c, image: x, resources: {claims: [{name: a}]}}]
    resourceClaims: [{name: a, resourceClaimTemplateName: in-another-file}]
- apiVersion: resource.nvidia.com/v1beta1
  kind: ComputeDomain
  metadata: {name: cd, namespace: default}
  spec: {numNodes: 2, channel: {resourceClaimTemplate: {name: channel}}}
metadata:
  resourceVersion: ""
"""

CRD = """apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: trainings.example.com}
spec:
  group: example.com
  names: {kind: Training, plural: trainings, singular: training, listKind: TrainingList}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            required: [workers]
            properties:
              workers: {type: integer, minimum: 1}
              port: {x-kubernetes-int-or-string: true}
              extra: {type: object, x-kubernetes-preserve-unknown-fields: true}
---
apiVersion: example.com/v1
kind: Training
metadata: {name: ok, namespace: default}
spec: {workers: 2, port: http, extra: {anything: 1}}
---
apiVersion: example.com/v1
kind: Training
metadata: {name: bad, namespace: default}
spec:
  workers: 0
  imag: x
"""


def _validate(capsys: pytest.CaptureFixture[str], tmp_path: Path, text: str, *flags: str) -> tuple[int, str]:
    path = tmp_path / "in.yaml"
    path.write_text(text)
    code = main(["validate", "-f", str(path), *flags])
    return code, capsys.readouterr().out


def test_a_kubectl_list_validates_item_by_item(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, out = _validate(capsys, tmp_path, LIST)
    f = tmp_path / "in.yaml"
    assert code == 0, out
    assert out.splitlines() == [
        f'warning: {f}[0]: Pod/p: spec.resourceClaims[0].resourceClaimTemplateName: Not found: "in-another-file": '
        "no ResourceClaimTemplate of this name in the inputs (line 24)",
        f"note: {f}[0]: ComputeDomain/cd: a custom resource (resource.nvidia.com/v1beta1): passed through unchecked, "
        "its CustomResourceDefinition is not among the inputs",
        "3 objects checked: valid, 1 warning (what the API server accepts but the scheduler cannot use as given: references not among "
        "the inputs, resources no node publishes, fields kubedra does not model yet; --strict-references makes them "
        "findings)",
    ]


def test_strict_references_make_unresolved_references_findings(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, out = _validate(capsys, tmp_path, LIST, "--strict-references", "-o", "json")
    assert code == 1
    body = json.loads(out)
    assert [(f["object"], f["field"], f["line"]) for f in body["findings"]] == [
        ("Pod/p", "spec.resourceClaims[0].resourceClaimTemplateName", 24)]
    assert body["warnings"] == []


def test_an_item_of_a_list_that_the_api_server_rejects_is_a_finding_on_its_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, out = _validate(capsys, tmp_path, LIST.replace("image: x,", "image: x, imagePullPolicey: Always,"))
    assert code == 1
    assert f'{tmp_path / "in.yaml"}[0]: Pod/p: spec.containers[0].imagePullPolicey: unknown field ' \
           '"spec.containers[0].imagePullPolicey" (line 23)' in out


def test_custom_resources_are_checked_against_their_crd(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, out = _validate(capsys, tmp_path, CRD)
    f = tmp_path / "in.yaml"
    assert code == 1
    assert out.splitlines()[:2] == [
        f'{f}[2]: Training/bad: spec.imag: unknown field "spec.imag" (line 34)',
        f"{f}[2]: Training/bad: spec.workers: Invalid value: 0: spec.workers in body should be greater than or equal "
        "to 1 (line 33)",
    ]
    assert "Training/ok" not in out
