"""What ``kubedra migrate`` writes is what the API server accepts, checked by ``kubedra validate`` (issue 37, item
3): no claim for a count of 0, no second object under a name already written (template or DeviceClass)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kubedra.cli import main

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "migrate"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def pod(limits: str = "{nvidia.com/gpu: 1}", name: str = "p") -> str:
    return (f"apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}}}\nspec:\n  containers:\n  - name: c\n"
            f"    image: x\n    resources:\n      limits: {limits}\n")


def valid(capsys: pytest.CaptureFixture[str], path: Path, text: str) -> None:
    path.write_text(text)
    code, report, _ = run(capsys, "validate", "-f", str(path), "-q")
    assert code == 0, report


def test_a_count_of_zero_makes_no_claim(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """``nvidia.com/gpu: 0`` asks for nothing: no ResourceClaimTemplate (``count: 0`` is invalid), no pod claim; the
    zero goes with the device plugin's name, and the other containers' asks migrate as before."""
    source = tmp_path / "in.yaml"
    source.write_text(pod("{nvidia.com/gpu: 0, cpu: 1}") + "  - {name: d, image: x, resources: {limits: "
                                                           "{nvidia.com/gpu: 2}}}\n")
    code, out, err = run(capsys, "migrate", "-f", str(source), "-o", "json", "-q")
    assert code == 0, err
    items = json.loads(out)["items"]
    kinds = [i["kind"] for i in items]
    assert kinds == ["ResourceClaimTemplate", "Pod"]
    assert items[0]["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"] == 2
    spec = items[1]["spec"]
    assert [c["name"] for c in spec["resourceClaims"]] == ["d-gpu"]
    by_name = {c["name"]: c for c in spec["containers"]}
    assert by_name["c"]["resources"] == {"limits": {"cpu": 1}}
    assert by_name["d"]["resources"] == {"claims": [{"name": "d-gpu"}]}


def test_zero_alone_leaves_no_template_and_migrates_to_a_valid_pod(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    source = tmp_path / "in.yaml"
    source.write_text(pod("{nvidia.com/gpu: 0}"))
    code, out, err = run(capsys, "migrate", "-f", str(source), "-o", "name", "-q")
    assert (code, out) == (0, "pod/p\n"), err
    migrated = tmp_path / "out.yaml"
    code, text, _ = run(capsys, "migrate", "-f", str(source), "-q")
    migrated.write_text(text)
    assert "nvidia.com/gpu" not in text and "claims" not in text
    assert run(capsys, "validate", "-f", str(migrated), "-q")[0] == 0


def test_identical_copies_migrate_alike(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """One file given twice: both copies migrate alike (one template name; the second was renamed p-pod-c-gpu),
    so the output holds identical copies that ``kubectl apply`` applies as one and ``validate`` accepts."""
    source = tmp_path / "in.yaml"
    source.write_text(pod())
    code, out, err = run(capsys, "migrate", "-f", str(source), "-f", str(source))
    assert code == 0, err
    first, second = out.split("---\napiVersion: resource.k8s.io/v1\n", 1)
    assert "apiVersion: resource.k8s.io/v1\n" + second == first
    assert "p-pod-c-gpu" not in out
    (tmp_path / "out.yaml").write_text(out)
    assert run(capsys, "validate", "-f", str(tmp_path / "out.yaml"), "-q")[0] == 0


@pytest.mark.parametrize("mode", ["claims", "extended-resource"])
def test_the_examples_migrate_to_what_validate_accepts(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, mode: str
) -> None:
    """The whole examples tree (workloads and device-plugin configs) in one run: in extended-resource mode it wrote
    DeviceClass gpu.nvidia.com twice with different specs (the MPS config's and the one serving nvidia.com/gpu), which
    the API server refuses and migrate then refused to read back."""
    code, out, err = run(capsys, "migrate", str(EXAMPLES), "--mode", mode, "-q")
    assert code == 0, err
    valid(capsys, tmp_path / "migrated.yaml", out)


PLUGIN = "version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - {name: nvidia.com/gpu, replicas: 4}\n"
CONFIGMAP = ("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: plugin, namespace: gpu-operator}\ndata:\n"
             "  any: |\n    version: v1\n    sharing:\n      timeSlicing:\n        resources:\n"
             "        - {name: nvidia.com/gpu, replicas: 2}\n")


def test_device_plugin_configs_never_write_two_classes_of_one_name(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Three bare configs and one ConfigMap given twice: each class name is written once (the third bare config's
    class was config.gpu.nvidia.com again, with other settings; the ConfigMap's copy wrote its classes twice)."""
    text = "---\n".join([PLUGIN, PLUGIN, PLUGIN.replace("4", "3"), CONFIGMAP, CONFIGMAP])
    source = tmp_path / "in.yaml"
    source.write_text(text)
    code, out, err = run(capsys, "migrate", "-f", str(source), "-o", "json", "-q")
    assert code == 0, err
    names = [i["metadata"]["name"] for i in json.loads(out)["items"] if i["kind"] == "DeviceClass"]
    assert len(names) == len(set(names)) == 4, names
    valid(capsys, tmp_path / "out.json", out)


def test_a_claim_name_the_pod_has_already_is_numbered_not_refused(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """An app container named init claims init-gpu, and so did the init containers' shared claim: a valid pod was
    refused (found by test_migrate_property.py). The second claim is init-gpu-2."""
    source = tmp_path / "in.yaml"
    source.write_text(pod().replace("name: c\n", "name: init\n") + "  initContainers:\n  - {name: i, image: x, "
                      "resources: {limits: {nvidia.com/gpu: 2}}}\n")
    code, out, err = run(capsys, "migrate", "-f", str(source), "-o", "json", "-q")
    assert code == 0, err
    spec = json.loads(out)["items"][-1]["spec"]
    assert [c["name"] for c in spec["resourceClaims"]] == ["init-gpu", "init-gpu-2"]
    valid(capsys, tmp_path / "out.json", out)


@pytest.mark.parametrize(("container", "claim"), [('""', "containers-0-gpu"), ("Main_GPU", "main-gpu-gpu")])
def test_a_container_name_no_label_can_hold_gives_claim_names_that_are(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, container: str, claim: str
) -> None:
    """A container named "" made a claim "-gpu" the API server refuses, and migrating the output again failed
    (found by test_fuzz_cli.py): the name's piece is lower-cased and trimmed, its place in the pod where none is
    left; migrating again changes nothing."""
    source = tmp_path / "in.yaml"
    source.write_text(pod().replace("name: c\n", f"name: {container}\n"))
    code, out, err = run(capsys, "migrate", "-f", str(source), "-q")
    assert code == 0, err
    assert f"name: {claim}" in out and f"name: p-{claim}" in out
    again = tmp_path / "out.yaml"
    again.write_text(out)
    code, twice, err = run(capsys, "migrate", "-f", str(again), "-q")
    assert (code, twice) == (0, out), err


def test_an_escaped_surrogate_pair_is_written_as_its_character(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """Found by tests/cli/test_fuzz_cli.py::test_migrate: JSON's "\\ud800\\udc00" (U+10000) was written back as two
    escaped surrogates, which no YAML reader accepts, so migrating migrate's output failed."""
    source = tmp_path / "in.json"
    source.write_text('{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "labels": {"a": "\\ud800\\udc00x"}},'
                      ' "spec": {"containers": [{"name": "c", "image": "x", "resources": {"limits": {"nvidia.com/gpu": 1}}}]}}')
    assert main(["migrate", str(source)]) == 0
    out = capsys.readouterr().out
    assert "a: \U00010000x" in out
    again = tmp_path / "again.yaml"
    again.write_text(out)
    assert main(["migrate", str(again)]) == 0
    assert capsys.readouterr().out == out


def test_every_command_reads_an_escaped_surrogate_pair_alike(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """Found by tests/cli/test_fuzz_cli.py::test_migrate: a NodePool whose apiVersion is JSON's "\\ud800\\udc00/" was
    passed by migrate's checks (which read two code points) and refused when migrate read its own output (one
    character). Now the JSON text is read as one character by every command: refused both times."""
    text = ('{"apiVersion": "v1", "kind": "List", "items": [{"apiVersion": "\\ud800\\udc00/", "kind": "NodePool", '
            '"metadata": {"name": "l4"}, "spec": {"count": 1}}]}')
    source = tmp_path / "in.json"
    source.write_text(text)
    assert main(["migrate", str(source)]) == 2
    assert 'no kind "NodePool" in \U00010000/' in capsys.readouterr().err
    assert main(["validate", "-f", str(source)]) == 1
    assert 'no kind "NodePool" in \U00010000/' in capsys.readouterr().out
