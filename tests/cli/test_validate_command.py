"""``kubedra validate``: every finding the API server (or the simulation's expansion) would refuse, exit 0/1/2."""

from __future__ import annotations

import builtins
import io
import json
import re
from pathlib import Path
from typing import Any

import pytest

from kubedra.cli import main
from kubedra.data import seed_dir

SEED = str(seed_dir())

CLASS = """
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {{name: {name}}}
spec:
  selectors: [{{cel: {{expression: '{expression}'}}}}]
"""

CLAIM = """
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: c, namespace: ml}
spec:
  devices:
    requests:
    - name: a
      exactly: {deviceClassName: gpu.nvidia.com, selectors: [{cel: {expression: 'device.driver'}}]}
    - name: b
      firstAvailable: [{name: x, deviceClassName: gpu.nvidia.com, selectors: [{cel: {expression: '1 +'}}]}]
"""

TEMPLATE = """
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: t, namespace: ml}
spec:
  spec:
    devices:
      requests: [{name: a, exactly: {deviceClassName: gpu.nvidia.com, selectors: [{cel: {expression: '"yes"'}}]}}]
"""

TAINT_RULE = """
apiVersion: resource.k8s.io/v1beta2
kind: DeviceTaintRule
metadata: {name: r}
spec:
  deviceSelector: {selectors: [{cel: {expression: 'device.capacity["gpu.nvidia.com"].memory'}}]}
  taint: {key: k, effect: NoSchedule}
"""

POOL = """
apiVersion: kubedra.io/v1alpha1
kind: NodePool
metadata: {name: gpus}
spec:
  count: COUNT
  gpu: {model: MODEL, count: 8}
"""

DEPLOYMENT = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: ml}
spec:
  replicas: REPLICAS
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      resourceClaims: [{name: gpu, resourceClaimTemplateName: t}]
      containers: [{name: main, image: x, resources: {claims: [{name: CLAIM}]}}]
"""

STRING_RESULT = "must evaluate to bool or the unknown type, not string"


LINE = re.compile(r" \(line \d+\)$", re.M)


def _without_lines(text: str) -> str:
    """The findings without the ``(line N)`` each ends with (the tests that check lines say so)."""
    return LINE.sub("", text)


def _validate(capsys: pytest.CaptureFixture[str], tmp_path: Path, *docs: str, args: tuple[str, ...] = ()) -> tuple[
        int, str, str]:
    path = tmp_path / "in.yaml"
    path.write_text("\n---\n".join(docs))
    code = main(["validate", "-f", str(path), "-o", "table", *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_clean_input_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", "-f", SEED, "-q", "-o", "table"]) == 0
    out, err = capsys.readouterr()
    assert out.strip() == "4 objects checked: valid (2 other documents passed through unchecked)"
    assert err == ""


def test_every_selector_is_compiled_and_must_return_bool(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, out, _ = _validate(
        capsys, tmp_path, CLASS.format(name="s", expression="device.driver"), CLAIM, TEMPLATE, TAINT_RULE
    )
    assert code == 1
    assert out.splitlines()[0].endswith('"device.driver": must evaluate to bool or the unknown type, not string '
                                        "(line 6)")  # the line of the expression in the file
    lines = _without_lines(out).splitlines()
    f = tmp_path / "in.yaml"
    assert lines[0] == (f'{f}[0]: DeviceClass/s: spec.selectors[0].cel.expression: Invalid value: "device.driver": '
                        f"{STRING_RESULT}")
    assert lines[1] == (f"{f}[1]: ResourceClaim/c: spec.devices.requests[0].exactly.selectors[0].cel.expression: "
                        f'Invalid value: "device.driver": {STRING_RESULT}')
    assert lines[2].startswith(
        f"{f}[1]: ResourceClaim/c: spec.devices.requests[1].firstAvailable[0].selectors[0].cel.expression: "
        'Invalid value: "1 +": compilation failed: ERROR: <input>:1:4: Syntax error:'
    )
    template = next(line for line in lines if "ResourceClaimTemplate/t" in line)
    assert template == (f"{f}[2]: ResourceClaimTemplate/t: spec.spec.devices.requests[0].exactly.selectors[0]"
                        f'.cel.expression: Invalid value: "\\"yes\\"": {STRING_RESULT}')
    rule = next(line for line in lines if "DeviceTaintRule/r" in line)
    assert rule.endswith("spec.deviceSelector.selectors[0].cel.expression: Invalid value: "
                         '"device.capacity[\\"gpu.nvidia.com\\"].memory": must evaluate to bool or the unknown type, '
                         "not kubernetes.Quantity")
    # The release's OpenAPI schema (1.36+) has no deviceSelector.selectors any more: a strict schema finding.
    assert f'{f}[3]: DeviceTaintRule/r: spec.deviceSelector.selectors: unknown field "spec.deviceSelector.selectors"' \
        in out
    assert lines[-1] == "4 objects checked: 6 findings"


# Upstream's verdicts (k8s.io/dynamic-resource-allocation v0.37.2 CompileCELExpression, NewExpressions, MaxCost
# against CELSelectorExpressionMaxCost = 1,000,000), measured with a throwaway Go program.
COSTS = [
    ("device.attributes.all(d, device.attributes[d].all(k, device.attributes.all(e, "
     "device.attributes[e].all(j, true))))", True),  # MaxCost 3,414,275
    ("device.attributes.all(d, device.attributes.all(e, device.attributes.all(f, device.attributes.all(g, true))))",
     True),  # 3,348,675
    ("device.attributes.all(d, device.attributes[d].all(k, device.attributes.all(e, true)))", False),  # 104,707
    ("device.attributes.exists(d, device.attributes[d].exists(k, "
     'string(device.attributes[d][k]).contains("H100")))', False),  # 24,867
]


@pytest.mark.parametrize(("expression", "rejected"), COSTS)
def test_the_cost_limit_as_upstream_estimates_it(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, expression: str, rejected: bool
) -> None:
    code, out, _ = _validate(capsys, tmp_path, CLASS.format(name="slow", expression=expression))
    assert code == (1 if rejected else 0)
    if rejected:
        assert _without_lines(out).splitlines()[0].endswith(
            "DeviceClass/slow: spec.selectors[0].cel.expression: Forbidden: too complex, exceeds cost limit"
        )


@pytest.mark.parametrize(("gates", "code"), [("DRAConsumableCapacity=false", 1), ("", 0)])
def test_selectors_compile_with_the_releases_gates(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, gates: str, code: int
) -> None:
    doc = CLASS.format(name="shared", expression="device.allowMultipleAllocations")
    got, out, _ = _validate(capsys, tmp_path, doc, args=("--feature-gates", gates) if gates else ())
    assert got == code
    if code:
        assert "undefined field 'allowMultipleAllocations'" in out


def test_nodepools_are_expanded_as_simulate_expands_them(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    node = "apiVersion: v1\nkind: Node\nmetadata: {name: gpus-0}\n"
    code, out, _ = _validate(capsys, tmp_path, POOL.replace("COUNT", "-1").replace("MODEL", "A200"))
    assert code == 1
    assert "NodePool/gpus: spec.count: Invalid value: -1: must be greater than or equal to 0" in out
    assert "NodePool/gpus: spec.gpu.model: unknown GPU model 'A200'" in out
    code, out, _ = _validate(capsys, tmp_path, node, POOL.replace("COUNT", "2").replace("MODEL", "L4"))
    assert code == 1
    assert (
        f'{tmp_path / "in.yaml"}[1]: NodePool/gpus: metadata.name: Duplicate value: "gpus-0": Node gpus-0 is also '
        f"defined at {tmp_path / 'in.yaml'}[0]: Node/gpus-0"
    ) in out


@pytest.mark.parametrize(
    ("replicas", "claim", "finding"),
    [
        ("-1", "gpu", "Deployment/web: spec.replicas: Invalid value: -1: must be greater than or equal to 0"),
        ("0", "gpus", "Deployment/web: spec.template.spec.containers[0].resources.claims[0].name: Not found: "
         '"gpus": must be the name of an entry in pod.spec.resourceClaims'),
    ],
)
def test_workloads_and_their_templates(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, replicas: str, claim: str, finding: str
) -> None:
    code, out, _ = _validate(capsys, tmp_path, TEMPLATE.replace('"yes"', "true"),
                             DEPLOYMENT.replace("REPLICAS", replicas).replace("CLAIM", claim))
    assert code == 1
    assert _without_lines(out).splitlines() == [f"{tmp_path / 'in.yaml'}[1]: {finding}", "2 objects checked: 1 finding"]
    assert LINE.search(out.splitlines()[0])  # and the line of the field


def test_a_pod_naming_an_unknown_claim(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    pod = "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, resources: {claims: [{name: g}]}}]}"
    code, out, _ = _validate(capsys, tmp_path, pod)
    assert code == 1
    assert 'Pod/p: spec.containers[0].resources.claims[0].name: Not found: "g"' in out


def test_an_input_with_no_objects_is_a_finding(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, out, _ = _validate(capsys, tmp_path, "# nothing here\n")
    assert code == 1
    assert out.splitlines()[0] == f"{tmp_path / 'in.yaml'}: no objects: the input holds no Kubernetes documents"


def test_wrong_shapes_are_findings(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, out, _ = _validate(capsys, tmp_path, "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec: {containers: 3}\n")
    assert code == 1
    assert "Pod/x: spec.containers" in out


@pytest.mark.parametrize("text", ["apiVersion: v1\nkind: Pod\nmetadata: {name: x\n", "{not json"])
def test_unparsable_input_exits_2(capsys: pytest.CaptureFixture[str], tmp_path: Path, text: str) -> None:
    code, out, err = _validate(capsys, tmp_path, text)
    assert (code, out) == (2, "")
    assert "error:" in err and "invalid" in err


def test_an_unreadable_file_exits_2(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert main(["validate", "-f", str(tmp_path / "missing.yaml")]) == 2
    assert "no such file or directory" in capsys.readouterr().err


def test_json_lists_the_findings(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    (tmp_path / "in.yaml").write_text(CLASS.format(name="s", expression="device.driver"))
    assert main(["validate", "-f", str(tmp_path / "in.yaml"), "-o", "json"]) == 1
    body = json.loads(capsys.readouterr().out)
    assert body == {
        "findings": [{
            "file": str(tmp_path / "in.yaml"), "document": 0, "object": "DeviceClass/s",
            "field": "spec.selectors[0].cel.expression", "line": 6,
            "message": f'Invalid value: "device.driver": {STRING_RESULT}',
        }],
        "warnings": [],
        "notes": [],
        "checked": 1,
        "unchecked": [],
    }


class _Once(io.BytesIO):
    """stdin that can be read once: a second read of it would see nothing, so would lose the input."""

    def __init__(self, data: bytes) -> None:
        super().__init__(data)
        self.reads = 0

    def read(self, size: int | None = -1) -> bytes:
        self.reads += 1
        assert self.reads == 1, "stdin read twice"
        return super().read(size)


@pytest.mark.parametrize(("text", "code", "last"), [
    (CLASS.format(name="s", expression='device.driver == "x"'), 0, "1 object checked: valid"),
    (CLASS.format(name="s", expression="device.driver"), 1, "1 object checked: 1 finding"),
])
def test_stdin_is_read_once(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, text: str,
                            code: int, last: str) -> None:
    stdin = _Once(text.encode())
    monkeypatch.setattr("sys.stdin", stdin)
    assert main(["validate", "-f", "-", "-o", "table"]) == code
    out = capsys.readouterr().out.splitlines()
    assert stdin.reads == 1
    assert out[-1] == last
    if code:  # the finding names stdin, with the line of its field
        assert out[0] == (f'<stdin>[0]: DeviceClass/s: spec.selectors[0].cel.expression: Invalid value: '
                          f'"device.driver": {STRING_RESULT} (line 6)')


@pytest.mark.parametrize("expression", ['device.driver == "x"', "device.driver"])
def test_each_file_is_read_once(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
                                tmp_path: Path, expression: str) -> None:
    """The loader, the schema pass and the findings' lines share one read of each input (findings or not)."""
    path = tmp_path / "in.yaml"
    path.write_text(CLASS.format(name="s", expression=expression) + "\n---\n" + TEMPLATE.replace('"yes"', "true"))
    opened: list[str] = []
    real_open = builtins.open

    def counting_open(file: Any, *args: Any, **kwargs: Any) -> Any:
        if str(file) == str(path):
            opened.append(str(file))
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", counting_open)
    assert main(["validate", "-f", str(tmp_path), "-o", "table"]) == (0 if "==" in expression else 1)
    capsys.readouterr()
    assert opened == [str(path)]
