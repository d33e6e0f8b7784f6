"""``kubedra validate``: strict schema validation against the release's OpenAPI schemas (unknown kinds and fields
are findings, with their line), references across the inputs, and fields the release has gated off."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kubedra.cli import main

ROOT = Path(__file__).resolve().parents[2]


def validate(capsys: pytest.CaptureFixture[str], tmp_path: Path, text: str, *args: str) -> tuple[int, str]:
    path = tmp_path / "in.yaml"
    path.write_text(text)
    capsys.readouterr()
    code = main(["validate", "-f", str(path), "-q", *args])
    return code, capsys.readouterr().out


DEPLOYMENT = """apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: ml}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      resourceClaims: [{name: gpu, resourceClaimTemplateName: TEMPLATE}]
      containers:
      - name: main
        image: x
        imagePullPolicey: Always
        resources: {claims: [{name: gpu}]}
"""

TEMPLATE = """apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: one, namespace: NAMESPACE}
spec:
  spec:
    devices:
      requests: [{name: gpu, exactly: {deviceClassName: CLASS}}]
"""


def test_unknown_kind_is_a_finding_with_its_line(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, out = validate(capsys, tmp_path, "apiVersion: apps/v1\nkind: Deploymnet\nmetadata: {name: x}\n")
    assert code == 1
    assert out.splitlines()[0] == (f'{tmp_path / "in.yaml"}[0]: Deploymnet/x: kind: Unsupported value: "Deploymnet": '
                                   'no kind "Deploymnet" in apps/v1 in Kubernetes 1.37 (line 2)')


def test_unknown_fields_of_any_kind_are_findings(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    text = DEPLOYMENT.replace("TEMPLATE", "one") + "---\n" + TEMPLATE.replace("NAMESPACE", "ml").replace(
        "CLASS", "gpu.nvidia.com")
    code, out = validate(capsys, tmp_path, text, "-o", "json")
    assert code == 1
    (finding,) = json.loads(out)["findings"]
    assert finding == {
        "file": str(tmp_path / "in.yaml"), "document": 0, "object": "Deployment/web",
        "field": "spec.template.spec.containers[0].imagePullPolicey", "line": 13,
        "message": 'unknown field "spec.template.spec.containers[0].imagePullPolicey" (line 13)',
    }


def test_references_must_exist_in_the_pods_namespace(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    deployment = DEPLOYMENT.replace("TEMPLATE", "one").replace("        imagePullPolicey: Always\n", "")
    template = TEMPLATE.replace("NAMESPACE", "other").replace("CLASS", "big-gpus")
    code, out = validate(capsys, tmp_path, deployment + "---\n" + template)
    assert code == 0  # the API server accepts both: what they name may be in the cluster (a warning)
    f = tmp_path / "in.yaml"
    references = [
        f'{f}[0]: Deployment/web: spec.template.spec.resourceClaims[0].resourceClaimTemplateName: Not found: "one": '
        "exists in namespace other, not in the pod's namespace ml (line 9)",
        f'{f}[1]: ResourceClaimTemplate/one: spec.spec.devices.requests[0].exactly.deviceClassName: Not found: '
        "\"big-gpus\": no DeviceClass of this name in the inputs, nor one NVIDIA's chart or kubedra's installs "
        "(line 21)",
    ]
    assert out.splitlines() == [
        *(f"warning: {r}" for r in references),
        "2 objects checked: valid, 2 warnings (what the API server accepts but the scheduler cannot use as given: references not among "
        "the inputs, resources no node publishes, fields kubedra does not model yet; --strict-references makes them "
        "findings)",
    ]
    code, out = validate(capsys, tmp_path, deployment + "---\n" + template, "--strict-references")
    assert code == 1
    assert out.splitlines() == [*references, "2 objects checked: 2 findings"]
    code, out = validate(capsys, tmp_path, deployment + "---\n" + TEMPLATE.replace("NAMESPACE", "ml").replace(
        "CLASS", "mig.nvidia.com"))
    assert (code, out.strip()) == (0, "2 objects checked: valid")


@pytest.mark.parametrize(("release", "findings"), [("1.34", 1), ("1.35", 1), ("1.36", 0), ("1.37", 0)])
def test_fields_the_release_gates_off(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, release: str, findings: int
) -> None:
    text = ("apiVersion: resource.k8s.io/v1\nkind: DeviceClass\nmetadata: {name: gpus}\n"
            "spec: {extendedResourceName: example.com/gpu}\n")
    code, out = validate(capsys, tmp_path, text, "--kubernetes-version", release)
    assert code == (1 if findings else 0)
    if findings:
        assert out.splitlines()[0].endswith(
            f"DeviceClass/gpus: spec.extendedResourceName: Forbidden: feature gate DRAExtendedResource is off "
            f"(Kubernetes {release} defaults and --feature-gates): the API server drops this field (line 4)")


def test_nodepools_and_examples_are_clean(capsys: pytest.CaptureFixture[str]) -> None:
    for path in [ROOT / "examples" / "allocate", ROOT / "examples" / "migrate"]:
        capsys.readouterr()
        assert main(["validate", "-f", str(path), "-q"]) == 0, capsys.readouterr().out
    capsys.readouterr()
    assert main(["validate", "-f", str(ROOT / "src" / "kubedra" / "data" / "seed"), "-f",
                 str(ROOT / "src" / "kubedra" / "data" / "demo"), "-q"]) == 0


def test_migrated_output_is_clean_for_validate(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    capsys.readouterr()
    assert main(["migrate", "-f", str(ROOT / "examples" / "migrate"), "--gpu-memory", "80Gi"]) == 0
    (tmp_path / "out.yaml").write_text(capsys.readouterr().out)
    for release in ("1.36", "1.37"):
        assert main(["validate", "-f", str(tmp_path / "out.yaml"), "-q", "--kubernetes-version", release]) == 0, (
            capsys.readouterr().out)


def test_json_findings_carry_the_line_of_their_field(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    text = ("apiVersion: resource.k8s.io/v1\nkind: DeviceClass\nmetadata:\n  name: gpus\nspec:\n  selectors:\n"
            "  - cel:\n      expression: device.driver\n")
    code, out = validate(capsys, tmp_path, text, "-o", "json")
    assert code == 1
    (finding,) = json.loads(out)["findings"]
    assert (finding["field"], finding["line"]) == ("spec.selectors[0].cel.expression", 8)


@pytest.mark.parametrize(
    "head",
    [
        "apiVersion: {group: x}\nkind: NodePool\n",  # the fuzzer's: a map where a string belongs
        f"apiVersion: v1\nkind: {'Pod' * 200}\n",  # a kind no schema file could be named after
        "apiVersion: ../../../etc/v1\nkind: Passwd\n",
    ],
)
def test_a_kind_or_api_version_no_schema_file_could_have_is_a_finding_not_a_crash(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, head: str
) -> None:
    code, _ = validate(capsys, tmp_path, head + "metadata: {name: x}\n")
    assert code == 1
