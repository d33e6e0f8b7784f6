"""The openb trace reader: the stated mapping, the artifact's replay, bad cells named, and a cut that simulates."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from kubedra.cli import main
from kubedra.objects.errors import InvalidInputError
from kubedra.objects.load import load_text
from kubedra.sim.report import build_report
from kubedra.sim.scenario import build_scenario
from kubedra.sim.simulate import Options, simulate
from kubedra.traces import openb

CUT = Path(__file__).resolve().parents[2] / "examples" / "traces" / "openb"
NODES = (CUT / openb.NODE_FILE).read_text()
TASKS = (CUT / openb.pod_file("default")).read_text()
HEADER = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\n"


def _tasks(*rows: str) -> list[openb.Task]:
    return openb.read_tasks(HEADER + "".join(r + "\n" for r in rows), "pods.csv")


def _claim(doc: dict[str, object]) -> dict[str, object]:
    return doc["spec"]["spec"]["devices"]["requests"][0]["exactly"]  # type: ignore[index]


def test_nodes_of_one_shape_are_one_pool_and_unknown_models_are_declared() -> None:
    pools = openb.nodepools(openb.read_nodes(NODES))
    by_name = {p["metadata"]["name"]: p["spec"] for p in pools}
    assert sum(s["count"] for s in by_name.values()) == 14
    assert by_name["openb-p100-2gpu-64cpu-256gi"] == {
        "count": 2,
        "labels": {"kubedra.io/trace": "openb"},
        "allocatable": {"cpu": "64000m", "memory": "262144Mi"},
        "gpu": {"model": "P100", "count": 2, "memory": "16Gi"},
        "sharing": {"shares": 1000},
    }
    assert by_name["openb-v100m16-4gpu-32cpu-128gi"]["gpu"] == {"model": "V100-16GB", "count": 4}
    g2 = next(p for p in pools if p["metadata"]["name"].startswith("openb-g2-"))
    assert g2["metadata"]["annotations"] == {"kubedra.io/assumed": "G2: undisclosed model, memory 16Gi"}


def test_whole_gpus_shares_and_model_selectors() -> None:
    tasks = _tasks(
        "a,1000,2048,2,1000,,LS,Running,0,10,0",
        "b,1000,2048,1,460,,LS,Running,0,10,0",
        "c,1000,2048,1,1000,V100M16|G2,LS,Running,0,10,0",
        "d,500,1024,0,0,,BE,Running,0,10,0",
    )
    docs = openb.documents([], tasks, replay="trace")
    templates = [d for d in docs if d["kind"] == "ResourceClaimTemplate"]
    assert [_claim(t) for t in templates] == [
        {"deviceClassName": "gpu.nvidia.com", "count": 2, "capacity": {"requests": {"shares": "1000"}}},
        {"deviceClassName": "gpu.nvidia.com", "count": 1, "capacity": {"requests": {"shares": "460"}}},
        {
            "deviceClassName": "gpu.nvidia.com",
            "count": 1,
            "capacity": {"requests": {"shares": "1000"}},
            "selectors": [{"cel": {"expression": 'device.attributes["gpu.nvidia.com"].productName in '
                                   '["Tesla V100-SXM2-16GB", "G2"]'}}],
        },
    ]
    pods = [d for d in docs if d["kind"] == "Pod"]
    assert "resourceClaims" not in pods[3]["spec"]
    assert pods[3]["spec"]["containers"][0]["resources"]["requests"] == {"cpu": "500m", "memory": "1024Mi"}


def test_trace_replay_keeps_arrival_and_run_time() -> None:
    docs = openb.documents([], _tasks("a,1,1,0,0,,LS,Running,100,400,150", "b,1,1,0,0,,LS,Running,130,,"),
                           replay="trace")
    annotations = [d["metadata"]["annotations"] for d in docs]
    assert annotations == [
        {"kubedra.io/start-after": "0s", "kubedra.io/run-for": "250s", "kubedra.io/trace-task": "a"},
        {"kubedra.io/start-after": "30s", "kubedra.io/trace-task": "b"},
    ]


def test_artifact_replay_is_seeded_and_tuned_to_capacity() -> None:
    tasks = openb.read_tasks(TASKS, "pods.csv")
    gpus = 68
    order = openb.artifact_order(tasks, gpus, seed=42, tune=1.3)
    assert order == openb.artifact_order(tasks, gpus, seed=42, tune=1.3)
    assert order != openb.artifact_order(tasks, gpus, seed=43, tune=1.3)
    assert sorted(t.name for t in order[: len(tasks)]) == sorted(t.name for t in tasks)  # every task once, shuffled
    total = sum(t.milli_gpus for t in order)
    assert total <= 1.3 * gpus * 1000 < total + max(t.milli_gpus for t in tasks)
    docs = openb.documents(openb.read_nodes(NODES), tasks)
    pods = [d for d in docs if d["kind"] == "Pod"]
    assert len(pods) == len(order)
    assert [p["metadata"]["annotations"]["kubedra.io/start-after"] for p in pods[:3]] == ["0s", "1s", "2s"]
    assert all("kubedra.io/run-for" not in p["metadata"]["annotations"] for p in pods)  # no departures


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ("a,x,1,0,0,,LS,Running,0,1,0", "pods.csv[1]: row 2: cpu_milli: must be a whole number, got 'x'"),
        ("a,1,1,1,1001,,LS,Running,0,1,0", "pods.csv[1]: row 2: gpu_milli: must be between 0 and 1000, got 1001"),
        ("a,1,1,1,0,,LS,Running,0,1,0", "pods.csv[1]: row 2: gpu_milli: must be at least 1 when num_gpu is set"),
        ("a,1,1,1,5,V100;x,LS,Running,0,1,0",
         "pods.csv[1]: row 2: gpu_spec: must be GPU models separated by |, got 'V100;x'"),
    ],
)
def test_bad_cells_are_named(row: str, message: str) -> None:
    with pytest.raises(InvalidInputError) as err:
        _tasks(row)
    assert [str(p) for p in err.value.problems] == [message]


def test_a_missing_column_is_named() -> None:
    with pytest.raises(InvalidInputError) as err:
        openb.read_nodes("sn,cpu_milli,gpu\nn,1,1\n", "nodes.csv")
    assert "missing columns: memory_mib, model" in str(err.value.problems[0])


def test_the_cut_simulates_with_every_gpu_model(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["trace", "openb", str(CUT)]) == 0
    text = capsys.readouterr().out
    loaded = load_text(text, source="openb.yaml")
    result = simulate(build_scenario(loaded, seed=0), Options())
    report = build_report(result)
    models = {m["model"]: m["total"] for m in report.summary["gpus"]["models"]}
    assert models == {"G2": 16, "G3": 16, "NVIDIA A10": 2, "P100": 4, "Tesla T4": 6, "Tesla V100-SXM2-16GB": 8,
                      "Tesla V100-SXM2-32GB": 16}
    assert report.summary["pods"]["running"] > 0
    assert len(list(yaml.safe_load_all(text))) == len(json.loads(_json(capsys))["items"])


def _json(capsys: pytest.CaptureFixture[str]) -> str:
    assert main(["trace", "openb", str(CUT), "-o", "json"]) == 0
    return capsys.readouterr().out


def test_cli_missing_file_and_bad_cell_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["trace", "openb", str(tmp_path)]) == 2
    assert "openb_node_list_gpu_node.csv" in capsys.readouterr().err
    (tmp_path / openb.NODE_FILE).write_text(NODES)
    (tmp_path / openb.pod_file("default")).write_text(HEADER + "a,1,1,1,2000,,LS,Running,0,1,0\n")
    assert main(["trace", "openb", str(tmp_path)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "row 2: gpu_milli: must be between 0 and 1000, got 2000" in captured.err


def test_the_optional_columns_may_be_missing() -> None:
    (task,) = openb.read_tasks("name,cpu_milli,memory_mib,num_gpu,gpu_milli\na,1000,1024,2,1000\n", "multigpu50.csv")
    assert (task.num_gpu, task.gpu_spec, task.created, task.deleted) == (2, "", None, None)


def test_the_replay_stops_where_the_artifact_samples() -> None:
    tasks = openb.read_tasks(TASKS, "pods.csv")
    order = openb.artifact_order(tasks, 10, seed=42, tune=1.3)
    prefix = openb.arrived_prefix(order, 10, 1.0)
    assert order[: len(prefix)] == prefix
    summed = [t.milli_gpus for t in prefix]
    assert sum(summed) >= 10_000 > sum(summed[:-1])
    docs = openb.documents(openb.read_nodes(NODES)[:1], tasks, arrived=1.0)  # one P100 node: 2 GPUs
    pods = [d for d in docs if d["kind"] == "Pod"]
    assert len(pods) == len(openb.arrived_prefix(openb.artifact_order(tasks, 2), 2, 1.0))
