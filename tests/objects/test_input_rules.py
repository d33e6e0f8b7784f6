"""What Kubernetes reads, kubedra reads: Quantities as numbers, Go integer ranges, API names, duplicates, bytes.

Each rule is checked where it is decided once (the decoder, the loader, the validators), through every reader that
relies on it: the loader's kinds, NodePools and workload templates.
"""

from __future__ import annotations

import io
import json
import os
from pathlib import Path
from typing import Any

import pytest
import yaml
from _samples import v1_slice

from kubedra.objects.decode import decode, number_text
from kubedra.objects.errors import InvalidInputError
from kubedra.objects.load import load_paths, load_text
from kubedra.objects.model import Node, Pod, ResourceClaim
from kubedra.objects.quantity import Quantity
from kubedra.sim.scenario import build_scenario


def _problems(text: str, **kwargs: Any) -> list[str]:
    with pytest.raises(InvalidInputError) as error:
        load_text(text, source="in.yaml", **kwargs)
    return [str(p) for p in error.value.problems]


def _scenario_problems(docs: list[dict[str, Any]]) -> list[str]:
    with pytest.raises(InvalidInputError) as error:
        build_scenario(load_text(yaml.safe_dump_all(docs, sort_keys=False), source="in.yaml"))
    return [str(p) for p in error.value.problems]


def deployment(limits: dict[str, Any], **meta: Any) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "cuda", **meta},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "cuda"}},
            "template": {
                "metadata": {"labels": {"app": "cuda"}},
                "spec": {"containers": [{"name": "cuda", "image": "cuda:12", "resources": {"limits": limits}}]},
            },
        },
    }


def v1_claim() -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": "claim-1"},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com"}}]}},
    }


POOL = {
    "apiVersion": "kubedra.io/v1alpha1",
    "kind": "NodePool",
    "metadata": {"name": "h100"},
    "spec": {
        "count": 1,
        "allocatable": {"cpu": 64, "memory": "512Gi", "pods": 110},
        "gpu": {"model": "H100-80GB", "count": 8},
        "devicePlugin": True,
    },
}


# --------------------------------------------------------------------------------------------------
# Quantities: int-or-string wherever Kubernetes takes a Quantity


def test_the_issue_reproduction_numbers_in_a_nodepool_and_a_deployment() -> None:
    """``allocatable: {cpu: 64, pods: 110}`` and ``limits: {nvidia.com/gpu: 1, cpu: 2}`` as people write them."""
    scenario = build_scenario(load_text(yaml.safe_dump_all([POOL, deployment({"nvidia.com/gpu": 1, "cpu": 2})])))
    assert scenario.nodes[0].status.allocatable == {"cpu": "64", "memory": "512Gi", "pods": "110", "nvidia.com/gpu": "8"}
    (arrival,) = scenario.workloads.arrivals
    assert arrival.pod.spec.containers[0].resources.limits == {"nvidia.com/gpu": "1", "cpu": "2"}


@pytest.mark.parametrize("kind", ["Deployment", "ReplicaSet", "StatefulSet", "Job"])
def test_numbers_in_every_workload_template(kind: str) -> None:
    doc = deployment({"nvidia.com/gpu": 1, "cpu": 0.5, "memory": 1e9})
    doc["kind"] = kind
    if kind == "Job":
        doc["apiVersion"] = "batch/v1"
        del doc["spec"]["replicas"], doc["spec"]["selector"]
        doc["spec"]["template"]["spec"]["restartPolicy"] = "Never"
    scenario = build_scenario(load_text(yaml.safe_dump(doc)))
    pods = [a.pod for a in scenario.workloads.arrivals] + [p for j in scenario.workloads.jobs for p in j.pods]
    assert pods[0].spec.containers[0].resources.limits == {"nvidia.com/gpu": "1", "cpu": "0.5", "memory": "1000000000"}


def test_numbers_in_claim_capacity_requests_and_slices() -> None:
    claim = v1_claim()
    claim["spec"]["devices"]["requests"][0]["exactly"]["capacity"] = {"requests": {"memory": 8, "bw": 0.25}}
    slice_ = v1_slice()
    slice_["spec"]["devices"][0]["capacity"] = {"memory": {"value": 80}}
    loaded = load_text(yaml.safe_dump_all([claim, slice_]))
    (obj,) = loaded.of_kind(ResourceClaim)
    capacity = obj.spec.devices.requests[0].exactly
    assert capacity is not None and capacity.capacity is not None
    assert capacity.capacity.requests == {"memory": "8", "bw": "0.25"}


@pytest.mark.parametrize(
    ("number", "text"),
    [(1, "1"), (0.5, "0.5"), (2.0, "2"), (1e21, "1e+21"), (1.5e-7, "1.5e-7"), (1e20, "100000000000000000000")],
)
def test_numbers_are_read_as_go_writes_them_into_json(number: float, text: str) -> None:
    """sigs.k8s.io/yaml turns YAML into JSON with Go's float formatting; Quantity.UnmarshalJSON parses that."""
    assert number_text(number) == text
    assert Quantity.parse(text) == Quantity.parse(repr(number) if isinstance(number, float) else str(number))


def test_wrong_quantity_types_name_the_key() -> None:
    docs = [POOL, deployment({"nvidia.com/gpu": True, "cpu": [2]})]
    assert _scenario_problems(docs) == [
        "in.yaml[1]: Deployment/cuda: spec.template.spec.containers[0].resources.limits[nvidia.com/gpu]: "
        "Invalid value: true: must be a quantity (a string or a number), not boolean",
        "in.yaml[1]: Deployment/cuda: spec.template.spec.containers[0].resources.limits[cpu]: "
        "Invalid value: array: must be a quantity (a string or a number), not array",
    ]


def test_workload_quantities_are_validated_as_the_api_server_does() -> None:
    """ValidateResourceRequirements on templates: parseable, not negative, whole extended resources, request=limit."""
    bad = deployment({"nvidia.com/gpu": 0.5, "cpu": "-1", "memory": "lots"})
    c = "in.yaml[0]: Deployment/cuda: spec.template.spec.containers[0].resources."
    assert _scenario_problems([bad]) == [
        c + 'limits[nvidia.com/gpu]: Invalid value: "0.5": must be an integer',
        c + 'limits[cpu]: Invalid value: "-1": must be greater than or equal to 0',
        c + 'limits[memory]: Invalid value: "lots": must be a quantity (e.g. 40Gi, 500m, 1e3)',
    ]
    mismatch = deployment({"nvidia.com/gpu": 1, "cpu": 1})
    mismatch["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"] = {"nvidia.com/gpu": 2, "cpu": 2}
    assert _scenario_problems([mismatch]) == [
        c + 'requests: Invalid value: "2": must be equal to nvidia.com/gpu limit of 1',
        c + 'requests: Invalid value: "2": must be less than or equal to cpu limit of 1',
    ]
    no_limit = deployment({})
    no_limit["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"] = {"nvidia.com/gpu": 1}
    assert _scenario_problems([no_limit]) == [
        c + "limits: Required value: Limit must be set for non overcommitable resources"
    ]


def test_pod_and_node_quantities_are_validated_the_same_way() -> None:
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p"},
        "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": -0.5}}}]},
    }
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n"}, "status": {"allocatable": {"pods": 1.5}}}
    assert _problems(yaml.safe_dump_all([pod, node])) == [
        'in.yaml[0]: Pod/p: spec.containers[0].resources.requests[cpu]: Invalid value: "-500m": '
        "must be greater than or equal to 0",
        'in.yaml[1]: Node/n: status.allocatable[pods]: Invalid value: "1.5": must be an integer',
    ]
    loaded = load_text(yaml.safe_dump({**node, "status": {"allocatable": {"pods": 110, "cpu": 0.5}}}))
    assert loaded.of_kind(Node)[0].status.allocatable == {"pods": "110", "cpu": "0.5"}


# --------------------------------------------------------------------------------------------------
# Go integer ranges, negative counts, names


def test_integers_outside_go_types_are_refused() -> None:
    claim = v1_claim()
    claim["spec"]["devices"]["requests"][0]["exactly"]["count"] = 2**63
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"priority": 2**31}}
    assert _problems(yaml.safe_dump_all([claim, pod])) == [
        "in.yaml[0]: ResourceClaim/claim-1: spec.devices.requests[0].exactly.count: Invalid value: "
        "9223372036854775808: cannot unmarshal number into Go value of type int64",
        "in.yaml[1]: Pod/p: spec.priority: Invalid value: 2147483648: cannot unmarshal number into Go value of type "
        "int32",
    ]
    big = deployment({})
    big["spec"]["replicas"] = 2**31
    assert _scenario_problems([big]) == [
        "in.yaml[0]: Deployment/cuda: spec.replicas: Invalid value: 2147483648: cannot unmarshal number into Go "
        "value of type int32"
    ]


def test_whole_floats_are_integers_as_yaml_to_json_makes_them() -> None:
    doc = deployment({})
    doc["spec"]["replicas"] = 3.0
    assert len(build_scenario(load_text(yaml.safe_dump(doc))).workloads.arrivals) == 3


def test_negative_counts() -> None:
    doc = deployment({})
    doc["spec"]["replicas"] = -1
    stateful = {**deployment({}), "kind": "StatefulSet", "metadata": {"name": "db"}}
    stateful["spec"] = {**stateful["spec"], "ordinals": {"start": -1}}
    assert _scenario_problems([doc, stateful]) == [
        "in.yaml[0]: Deployment/cuda: spec.replicas: Invalid value: -1: must be greater than or equal to 0",
        "in.yaml[1]: StatefulSet/db: spec.ordinals.start: Invalid value: -1: must be greater than or equal to 0",
    ]


def test_workload_names_and_namespaces_are_dns_1123() -> None:
    stateful = {**deployment({}), "kind": "StatefulSet", "metadata": {"name": "db.v1"}}
    problems = _scenario_problems([deployment({}, name="Cuda_1", namespace="ML"), stateful])
    assert problems[0].startswith(
        'in.yaml[0]: Deployment/Cuda_1: metadata.name: Invalid value: "Cuda_1": a lowercase RFC 1123 subdomain'
    )
    assert problems[1].startswith(
        'in.yaml[0]: Deployment/Cuda_1: metadata.namespace: Invalid value: "ML": a lowercase RFC 1123 label'
    )
    # apimachinery's IsDNS1123Label: a valid subdomain within the length fails only for its dots, and says so
    assert problems[2] == 'in.yaml[1]: StatefulSet/db.v1: metadata.name: Invalid value: "db.v1": must not contain dots'
    assert len(problems) == 3


def test_generate_name_is_checked_as_a_prefix() -> None:
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"generateName": "trainer-"}, "spec": {}}
    assert load_text(yaml.safe_dump(pod)).of_kind(Pod)[0].metadata.generate_name == "trainer-"
    pod["metadata"]["generateName"] = "Trainer-"
    (problem,) = _problems(yaml.safe_dump(pod))
    assert problem.startswith('in.yaml[0]: Pod/Trainer-: metadata.generateName: Invalid value: "Trainer-": ')


# --------------------------------------------------------------------------------------------------
# Duplicates


def test_two_objects_of_one_kind_namespace_and_name_are_refused_naming_both(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text(yaml.safe_dump(v1_claim()))
    second = v1_claim()
    second["metadata"]["namespace"] = "default"  # the same as none
    second["spec"]["devices"]["requests"][0]["exactly"]["count"] = 2
    (tmp_path / "b.yaml").write_text(yaml.safe_dump_all([v1_claim() | {"metadata": {"name": "other"}}, second]))
    with pytest.raises(InvalidInputError) as error:
        load_paths([str(tmp_path)])
    assert [str(p) for p in error.value.problems] == [
        f'{tmp_path}/b.yaml[1]: ResourceClaim/claim-1: metadata.name: Duplicate value: "default/claim-1": '
        f"ResourceClaim default/claim-1 is also defined at {tmp_path}/a.yaml[0]: ResourceClaim/claim-1"
    ]


def test_duplicates_in_lists_across_versions_and_raw_kinds() -> None:
    beta = {
        "apiVersion": "resource.k8s.io/v1beta2",
        "kind": "ResourceSlice",
        "metadata": {"name": v1_slice()["metadata"]["name"]},
        "spec": v1_slice()["spec"],
    }
    beta["spec"]["devices"] = beta["spec"]["devices"][:1]
    listed = {"apiVersion": "v1", "kind": "List", "items": [v1_slice(), beta, deployment({}), deployment({"cpu": 1})]}
    name = v1_slice()["metadata"]["name"]
    assert _problems(json.dumps(listed)) == [
        f'in.yaml[0]: ResourceSlice/{name}: items[1].metadata.name: Duplicate value: "{name}": ResourceSlice '
        f"{name} is also defined at in.yaml[0]: ResourceSlice/{name}: items[0]",
        'in.yaml[0]: Deployment/cuda: items[3].metadata.name: Duplicate value: "default/cuda": Deployment '
        "default/cuda is also defined at in.yaml[0]: Deployment/cuda: items[2]",
    ]


def test_same_name_in_another_namespace_or_kind_is_not_a_duplicate() -> None:
    other_namespace = v1_claim()
    other_namespace["metadata"]["namespace"] = "ml"
    template = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate", "metadata": {"name": "claim-1"}}
    loaded = load_text(yaml.safe_dump_all([v1_claim(), other_namespace, template]))
    assert len(loaded.objects) == 3


def test_duplicates_are_refused_without_api_validation_too() -> None:
    """``kubedra allocate`` loads with api_validation=False; a replaced claim would still be a silent surprise."""
    other = v1_claim()
    other["spec"]["devices"]["requests"][0]["name"] = "gpus"
    assert len(_problems(yaml.safe_dump_all([v1_claim(), other]), api_validation=False)) == 1


def test_the_same_object_twice_is_one_object_with_a_warning(tmp_path: Path) -> None:
    """One DeviceClass in every self-contained file, or one file given twice: ``kubectl apply`` leaves it unchanged."""
    path = tmp_path / "claim.yaml"
    path.write_text(yaml.safe_dump(v1_claim()))
    loaded = load_paths([str(path), str(path)])
    assert len(loaded.objects) == 1
    assert [str(w) for w in loaded.warnings] == [
        f"{path}[0]: ResourceClaim/claim-1: ResourceClaim default/claim-1 again, identical to the one at "
        f"{path}[0]: ResourceClaim/claim-1 -> one object"
    ]
    pools = load_text(yaml.safe_dump_all([POOL, POOL]))
    assert len(pools.raw) == 1


def test_a_node_made_by_a_pool_and_written_as_a_node() -> None:
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "h100-0"}}
    assert _scenario_problems([node, POOL]) == [
        'in.yaml[1]: NodePool/h100: metadata.name: Duplicate value: "h100-0": Node h100-0 is also defined at '
        "in.yaml[0]: Node/h100-0"
    ]


def test_json_duplicate_keys_are_refused_as_yaml_ones() -> None:
    text = '{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "a", "name": "b"}}'
    assert _problems(text) == ['in.yaml[0]: metadata.name: document refused: duplicate key "name" (line 1)']
    with pytest.raises(InvalidInputError) as error:
        load_text(text, source="in.json")
    assert "duplicate key" in str(error.value)
    # A string value that looks like a key end does not trip the check.
    assert load_text('{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "a", "labels": {"x": "\\":"}}}')


def test_json_duplicate_key_in_a_json_file(tmp_path: Path) -> None:
    path = tmp_path / "pod.json"
    path.write_text('{"apiVersion": "v1", "kind": "Pod",\n "kind": "Pod", "metadata": {"name": "a"}}')
    with pytest.raises(InvalidInputError) as error:
        load_paths([str(path)])
    assert [str(p) for p in error.value.problems] == [f'{path}[0]: kind: document refused: duplicate key "kind" (line 2)']


# --------------------------------------------------------------------------------------------------
# Bytes and files


def test_non_utf8_stdin_is_a_problem_not_a_crash() -> None:
    stdin = io.TextIOWrapper(io.BytesIO(b"apiVersion: v1\nkind: \xff\n"), encoding="utf-8")
    with pytest.raises(InvalidInputError) as error:
        load_paths(["-"], stdin=stdin)
    assert [str(p) for p in error.value.problems] == ["<stdin>: not UTF-8 text: invalid start byte at byte 21"]


def test_byte_order_mark_is_dropped() -> None:
    stdin = io.BytesIO(b"\xef\xbb\xbf" + json.dumps(v1_claim()).encode())
    assert len(load_paths(["-"], stdin=stdin).objects) == 1


def test_unreadable_directory_and_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "a.yaml").write_text("kind: x\n")

    def refuse(path: str) -> list[str]:
        raise PermissionError(13, "Permission denied", path)

    monkeypatch.setattr(os, "listdir", refuse)
    with pytest.raises(InvalidInputError) as error:
        load_paths([str(tmp_path)])
    assert [str(p) for p in error.value.problems] == [f"{tmp_path}: cannot read: Permission denied"]
    monkeypatch.undo()
    with pytest.raises(InvalidInputError) as error:
        load_paths([str(tmp_path / "a.yaml" / "x")])
    assert [str(p) for p in error.value.problems] == [f"{tmp_path}/a.yaml/x: no such file or directory"]


def test_decoder_never_raises_on_odd_values() -> None:
    for value in (float("nan"), float("inf"), 2**200, -(2**200), "1e999", [], {}):
        obj, problems = decode({"spec": {"containers": [{"resources": {"limits": {"cpu": value}}}]}}, Pod)
        assert obj is not None or problems


def test_a_cronjob_is_checked_by_the_scenario_and_simulated() -> None:
    job_spec = deployment({"nvidia.com/gpu": 1})["spec"]["template"]
    job_spec["spec"]["restartPolicy"] = "OnFailure"
    cron = {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {"name": "nightly"},
        "spec": {"schedule": "@daily", "jobTemplate": {"spec": {"template": job_spec}}},
    }
    scenario = build_scenario(load_text(yaml.safe_dump(cron), source="in.yaml"))
    assert [c.owner for c in scenario.workloads.cronjobs] == ["CronJob/default/nightly"]
    assert not any("CronJob" in note for note in scenario.notes)
    job_spec["spec"]["containers"][0]["resources"]["limits"] = {"nvidia.com/gpu": "one"}
    assert _scenario_problems([cron]) == [
        "in.yaml[0]: CronJob/nightly: spec.jobTemplate.spec.template.spec.containers[0].resources."
        'limits[nvidia.com/gpu]: Invalid value: "one": must be a quantity (e.g. 40Gi, 500m, 1e3)'
    ]
