"""The loader: safe YAML/JSON, files/directories/stdin, kinds, Lists, raw objects and error reporting."""

from __future__ import annotations

import io
import json
import time
from pathlib import Path

import pytest
import yaml
from _samples import V1_DOCUMENTS, v1_slice

from kubedra.objects.builder import Loaded, RawObject
from kubedra.objects.errors import InvalidInputError
from kubedra.objects.load import load_paths, load_text
from kubedra.objects.model import DeviceClass, Node, Pod, ResourceSlice
from kubedra.objects.parse import ParseLimits


def _problems(text: str, **kwargs: object) -> list[str]:
    with pytest.raises(InvalidInputError) as error:
        load_text(text, source="in.yaml", **kwargs)  # type: ignore[arg-type]
    return [str(p) for p in error.value.problems]


def test_every_v1_kind_loads() -> None:
    text = yaml.safe_dump_all([f() for f in V1_DOCUMENTS.values()])
    loaded = load_text(text, source="all.yaml")
    assert [type(o).__name__ for o in loaded.objects] == list(V1_DOCUMENTS)
    assert loaded.warnings == []
    node = loaded.of_kind(Node)[0]
    assert loaded.location_of(node).document == 5
    assert loaded.location_of(node).object == "Node/node-1"


def test_list_kinds_are_flattened_and_json_is_read() -> None:
    body = {
        "apiVersion": "v1",
        "kind": "List",
        "items": [
            V1_DOCUMENTS["DeviceClass"](),
            {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSliceList", "items": [v1_slice("a"), v1_slice("b")]},
        ],
    }
    loaded = load_text(json.dumps(body))
    assert [type(o).__name__ for o in loaded.objects] == ["DeviceClass", "ResourceSlice", "ResourceSlice"]


def test_errors_inside_lists_name_the_item() -> None:
    body = {
        "apiVersion": "v1",
        "kind": "List",
        "items": [{"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "Bad_Name"}}],
    }
    (problem,) = _problems(json.dumps(body))
    assert problem.startswith("in.yaml[0]: DeviceClass/Bad_Name: items[0].metadata.name: Invalid value")


def test_other_groups_pass_through_as_raw() -> None:
    text = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
---
apiVersion: kubedra.io/v1alpha1
kind: NodePool
metadata: {name: a100}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: c}
"""
    loaded = load_text(text)
    assert loaded.objects == []
    assert [r.data["kind"] for r in loaded.raw] == ["Deployment", "NodePool", "ConfigMap"]
    assert isinstance(loaded.raw[0], RawObject)
    assert loaded.location_of(loaded.raw[1]).object == "NodePool/a100"


def test_unknown_resource_k8s_io_kind_and_version() -> None:
    problems = _problems(
        "apiVersion: resource.k8s.io/v1\nkind: PodSchedulingContext\nmetadata: {name: x}\n"
        "---\napiVersion: resource.k8s.io/v2\nkind: DeviceClass\nmetadata: {name: y}\n"
    )
    assert problems[0].startswith('in.yaml[0]: PodSchedulingContext/x: kind: Unsupported value: "PodSchedulingContext"')
    assert problems[1].startswith('in.yaml[1]: DeviceClass/y: apiVersion: Unsupported value: "resource.k8s.io/v2"')


def test_empty_documents_skipped_and_non_mappings_refused() -> None:
    assert load_text("---\n---\n# only a comment\n").objects == []
    assert _problems("- 1\n- 2\n") == ["in.yaml[0]: a document must be a mapping with apiVersion and kind, not list"]
    assert _problems('"text"') == ["in.yaml[0]: a document must be a mapping with apiVersion and kind, not str"]
    assert _problems("metadata: {name: x}\n") == [
        "in.yaml[0]: ?/x: apiVersion: Required value: every object needs apiVersion"
    ]


def test_object_constructing_tags_are_refused() -> None:
    (problem,) = _problems("apiVersion: v1\nkind: Pod\nmetadata: !!python/object/apply:os.system [echo hi]\n")
    assert "YAML tag !!python/object/apply:os.system is not allowed (line 3" in problem
    (problem,) = _problems("a: !custom 1\n")
    assert "YAML tag !custom is not allowed" in problem


def test_alias_bomb_is_refused_quickly() -> None:
    lines = ["a: &a [x, x, x, x, x, x, x, x, x, x]"]
    for i in range(1, 12):
        prev, cur = chr(ord("a") + i - 1), chr(ord("a") + i)
        lines.append(f"{cur}: &{cur} [" + ", ".join([f"*{prev}"] * 10) + "]")
    start = time.perf_counter()
    (problem,) = _problems("\n".join(lines))
    assert time.perf_counter() - start < 30.0  # a hang guard, not a speed bound: expanded, it would never end
    assert "expands to more than 1000000 values through YAML aliases" in problem


def test_recursive_alias_and_deep_nesting_are_refused() -> None:
    assert "nested deeper than 64 levels" in _problems("a: &a [*a]\n")[0]
    assert "nested deeper than 64 levels" in _problems("[" * 65 + "]" * 65)[0]
    assert "nested deeper than 64 levels" in _problems('{"a":' * 70 + "1" + "}" * 70)[0]
    assert "nested too deeply" in _problems("[" * 100_000)[0] or "invalid YAML" in _problems("[" * 100_000)[0]
    load_text(yaml.safe_dump({"apiVersion": "apps/v1", "kind": "X", "d": [[[[1]]]]}))  # modest nesting is fine


def test_huge_input_is_refused() -> None:
    problems = _problems("a: " + "x" * 2000 + "\n", limits=ParseLimits(max_bytes=1000))
    assert problems == ["in.yaml: input refused: 2004 bytes is more than the limit of 1000 bytes (--max-file-size raises it)"]


def test_duplicate_keys_are_refused() -> None:
    (problem,) = _problems("apiVersion: v1\nkind: Pod\nmetadata:\n  name: a\n  name: b\n")
    assert problem == 'in.yaml[0]: metadata.name: document refused: duplicate key "name" (line 5)'


def test_yaml_syntax_error_names_line() -> None:
    (problem,) = _problems("apiVersion: v1\nkind: [Pod\n")
    assert problem.startswith("in.yaml[0]: invalid YAML:") and "line 3" in problem


def test_timestamps_stay_strings() -> None:
    text = yaml.safe_dump(V1_DOCUMENTS["DeviceTaintRule"]()).replace(
        "effect: NoExecute", "effect: NoExecute\n    timeAdded: 2026-01-02T03:04:05Z"
    )
    (rule,) = load_text(text).objects
    assert rule.spec.taint.time_added == "2026-01-02T03:04:05Z"


def test_every_problem_is_reported_with_paths() -> None:
    text = """
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: s}
spec:
  driver: gpu.nvidia.com
  pool: {name: p, generation: one, resourceSliceCount: 1}
  nodeName: n
  devices:
  - name: gpu-0
    attributes:
      gpu.nvidia.com/model: {strin: A100}
    extra: 1
  - attributes: {}
"""
    assert _problems(text) == [
        'in.yaml[0]: ResourceSlice/s: spec.pool.generation: Invalid value: "one": must be an integer, not string',
        "in.yaml[0]: ResourceSlice/s: spec.devices[0].attributes[gpu.nvidia.com/model].strin: unknown field "
        '"spec.devices[0].attributes[gpu.nvidia.com/model].strin"',
        'in.yaml[0]: ResourceSlice/s: spec.devices[0].extra: unknown field "spec.devices[0].extra"',
        "in.yaml[0]: ResourceSlice/s: spec.devices[1].name: Required value",
    ]


def test_numeric_quantities_and_nulls_are_read_as_the_api_server_does() -> None:
    doc = v1_slice(devices=1)
    doc["spec"]["devices"][0]["capacity"] = {"memory": {"value": 1024}}
    doc["spec"]["devices"][0]["taints"] = None
    (s,) = load_text(yaml.safe_dump(doc)).objects
    assert isinstance(s, ResourceSlice) and s.spec.devices[0].capacity["memory"].value == "1024"
    pod = V1_DOCUMENTS["Pod"]()
    pod["spec"]["containers"][0]["resources"]["limits"] = {"cpu": 2, "nvidia.com/gpu": 1}
    (p,) = load_text(yaml.safe_dump(pod)).objects
    assert isinstance(p, Pod) and p.spec.containers[0].resources.limits == {"cpu": "2", "nvidia.com/gpu": "1"}


def test_paths_directories_and_stdin(tmp_path: Path) -> None:
    (tmp_path / "b.yaml").write_text(yaml.safe_dump(V1_DOCUMENTS["Node"]()))
    (tmp_path / "a.json").write_text(json.dumps(V1_DOCUMENTS["DeviceClass"]()))
    (tmp_path / "c.yml").write_text(yaml.safe_dump(V1_DOCUMENTS["Pod"]()))
    (tmp_path / "notes.txt").write_text("not yaml: [")
    (tmp_path / "run.sh").write_text("echo hi")
    stdin = io.StringIO(yaml.safe_dump(v1_slice()))
    loaded = load_paths([str(tmp_path), "-"], stdin=stdin)
    assert [type(o).__name__ for o in loaded.objects] == ["DeviceClass", "Node", "Pod", "ResourceSlice"]
    assert loaded.location_of(loaded.objects[0]).file == str(tmp_path / "a.json")
    assert loaded.location_of(loaded.objects[3]).file == "<stdin>"


def test_path_problems(tmp_path: Path) -> None:
    (tmp_path / "latin1.yaml").write_bytes(b"a: \xff\n")
    with pytest.raises(InvalidInputError) as error:
        load_paths([str(tmp_path / "missing.yaml"), str(tmp_path / "latin1.yaml"), str(tmp_path / "empty")])
    messages = [str(p) for p in error.value.problems]
    assert messages[0].endswith("missing.yaml: no such file or directory")
    assert "not UTF-8 text" in messages[1]
    (tmp_path / "empty").mkdir(exist_ok=True)
    with pytest.raises(InvalidInputError) as error:
        load_paths([str(tmp_path / "empty")])
    assert str(error.value).endswith("no .yaml, .yml or .json files in this directory")


def test_big_file_is_refused_before_reading(tmp_path: Path) -> None:
    big = tmp_path / "big.yaml"
    big.write_text("a: 1\n" * 400)
    with pytest.raises(InvalidInputError) as error:
        load_paths([str(big)], limits=ParseLimits(max_bytes=1000))
    assert "input refused: 2000 bytes" in str(error.value)


def test_of_kind_and_loaded_defaults() -> None:
    loaded = load_text(yaml.safe_dump_all([V1_DOCUMENTS["DeviceClass"](), V1_DOCUMENTS["Node"]()]))
    assert [c.metadata.name for c in loaded.of_kind(DeviceClass)] == ["gpu.nvidia.com"]
    assert Loaded().location_of(object()).file == ""
