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


def _rows(workload: str) -> list[dict[str, str]]:
    import csv

    with (CUT / openb.pod_file(workload)).open() as f:
        return list(csv.DictReader(f))


@pytest.mark.parametrize("workload", ["gpushare100", "multigpu50", "gpuspec33"])
def test_each_workload_variant_maps_as_stated_and_simulates(workload: str, capsys: pytest.CaptureFixture[str]
                                                            ) -> None:
    """The variants' cuts through the CLI, in the trace's order (--replay trace): pod i is row i; its claim asks
    num_gpu devices of gpu_milli shares (1000 each when num_gpu > 1) with a productName selector iff gpu_spec is set,
    read from the CSV here with the csv module."""
    assert main(["trace", "openb", str(CUT), "--workload", workload, "--replay", "trace"]) == 0
    docs = list(yaml.safe_load_all(capsys.readouterr().out))
    templates = {d["metadata"]["name"]: _claim(d) for d in docs if d["kind"] == "ResourceClaimTemplate"}
    pods = [d for d in docs if d["kind"] == "Pod"]
    rows = _rows(workload)
    assert len(pods) == len(rows)
    for pod, row in zip(pods, rows, strict=True):
        assert pod["metadata"]["annotations"]["kubedra.io/trace-task"] == row["name"]
        claims = pod["spec"].get("resourceClaims", [])
        if int(row["num_gpu"]) == 0:
            assert not claims
            continue
        exactly = templates[claims[0]["resourceClaimTemplateName"]]
        shares = row["gpu_milli"] if row["num_gpu"] == "1" else "1000"
        assert (exactly["count"], exactly["capacity"]["requests"]["shares"]) == (int(row["num_gpu"]), shares)
        assert bool(exactly.get("selectors")) == bool(row.get("gpu_spec"))
    report = build_report(simulate(build_scenario(load_text(yaml.safe_dump_all(docs))), Options()))
    assert report.summary["pods"]["running"] + report.summary["pods"]["succeeded"] > 0


@pytest.mark.parametrize("name", ["A100-40GB", "H100-80GB"])
def test_a_share_maps_to_the_smallest_mig_profile_with_enough_compute(name: str) -> None:
    """Brute force over every share 1-1000: the profiles with at least that share of the compute slices (g of the
    largest g), media-extension variants left out; the answer has the fewest slices, then the least memory."""
    from kubedra.cluster.catalogue import lookup

    model = lookup(name)
    plain = [p for p in model.mig_profiles if "+" not in p.name]
    full = max(int(p.name.split("g.")[0]) for p in plain)
    for milli in range(1, 1001):
        enough = [p for p in plain if int(p.name.split("g.")[0]) / full >= milli / 1000]
        best = min(enough, key=lambda p: (int(p.name.split("g.")[0]), p.memory_mib))
        assert openb.mig_profile(model, milli) == best.name, milli
    assert openb.mig_profile(model, 1000).startswith(f"{full}g.")


def test_the_mig_option_maps_shares_to_profiles_and_simulates(capsys: pytest.CaptureFixture[str]) -> None:
    """gpuspec33's cut as MIG on A100-40GB (compute-slice sizes 1, 2, 3, 4, 7): pools MIG-enabled with the trace's
    model as a label, gpu_spec a node affinity on it, and every device allocated (artifact replay: nothing leaves) of
    the smallest size whose share of 7 slices covers the task's gpu_milli."""
    assert main(["trace", "openb", str(CUT), "--workload", "gpuspec33", "--mig", "A100-40GB"]) == 0
    docs = list(yaml.safe_load_all(capsys.readouterr().out))
    pools = [d for d in docs if d["kind"] == "NodePool" and "gpu" in d["spec"]]
    assert {p["spec"]["gpu"]["model"] for p in pools} == {"A100-40GB"}
    assert all(p["spec"]["mig"] == {"enabled": True} and "kubedra.io/trace-model" in p["spec"]["labels"]
               for p in pools)
    rows = {r["name"]: r for r in _rows("gpuspec33")}
    pods = [d for d in docs if d["kind"] == "Pod"]
    row_of = {d["metadata"]["name"]: rows[d["metadata"]["annotations"]["kubedra.io/trace-task"]] for d in pods}
    for pod in pods:
        row = row_of[pod["metadata"]["name"]]
        affinity = pod["spec"].get("affinity")
        assert bool(affinity) == bool(row["gpu_spec"] and int(row["num_gpu"]))
        if affinity:
            term = affinity["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"][0]
            assert term["matchExpressions"][0]["values"] == row["gpu_spec"].split("|")
    result = simulate(build_scenario(load_text(yaml.safe_dump_all(docs))), Options())
    state = result.state
    placed = 0
    for claim in state.claims.values():
        allocation = claim.status.allocation
        if allocation is None:
            continue
        row = row_of[claim.metadata.name.rsplit("-gpu-", 1)[0]]
        milli = int(row["gpu_milli"]) if row["num_gpu"] == "1" else 1000
        for allocated in allocation.devices.results:
            record = state.devices.by_key[f"{allocated.driver}/{allocated.pool}/{allocated.device}"]
            profile = record.device.attributes["profile"].string
            assert profile is not None
            assert int(profile.split("g.")[0]) == min(g for g in (1, 2, 3, 4, 7) if g * 1000 >= milli * 7), milli
            placed += 1
    assert placed > 0


def test_mig_of_a_model_without_mig_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["trace", "openb", str(CUT), "--mig", "T4"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "--mig: 'T4' is not a MIG-capable GPU model; use one of A100-40GB" in captured.err


def test_pool_per_node_names_nodes_after_the_trace_so_they_sort_as_its_do(capsys: pytest.CaptureFixture[str]) -> None:
    """One NodePool of one node per trace row, named after its sn: the simulated nodes' names sort in the trace's
    own order (the order the artifact's scheduler breaks ties in), where pools by shape group the models."""
    assert main(["trace", "openb", str(CUT), "--pool-per-node"]) == 0
    docs = list(yaml.safe_load_all(capsys.readouterr().out))
    pools = [d for d in docs if d["kind"] == "NodePool"]
    trace = openb.read_nodes(NODES)
    assert [p["metadata"]["name"] for p in pools] == [n.name for n in trace]
    assert all(p["spec"]["count"] == 1 for p in pools)
    result = simulate(build_scenario(load_text(yaml.safe_dump_all(docs))), Options())
    assert sorted(result.state.nodes) == [f"{n.name}-0" for n in sorted(trace, key=lambda n: n.name)]
    by_shape = {p["metadata"]["name"]: p["spec"]["count"] for p in openb.nodepools(trace)}
    assert sum(by_shape.values()) == len(pools)
