"""TrainJob expansion without a control plane (``tests/trainer`` compares it with the real controller manager):
the example's JobSet, Jobs and pods; the strategic merge of runtime patches; what is refused, noted and dropped."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from kubedra.objects.errors import InvalidInputError
from kubedra.objects.load import load_text
from kubedra.sim.scenario import build_scenario
from kubedra.sim.simulate import Options, simulate
from kubedra.sim.trainjobs import strategic_merge, trainjob_jobset

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "workloads" / "trainjob.yaml"


def docs() -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(EXAMPLE.read_text()) if d]


def of_kind(kind: str) -> dict[str, Any]:
    return next(d for d in docs() if d["kind"] == kind)


def test_the_example_runs_four_indexed_pods_one_per_node_for_six_hours() -> None:
    scenario = build_scenario(load_text(EXAMPLE.read_text()))
    result = simulate(scenario, Options(fragmentation_samples=0))
    pods = sorted(result.state.pods.values(), key=lambda r: r.pod.metadata.name)
    assert [p.pod.metadata.name.rsplit("-", 1)[0] for p in pods] == [f"llm-node-0-{i}" for i in range(4)]
    assert sorted(p.pod.spec.node_name for p in pods) == [f"h100-{i}" for i in range(4)]
    assert all(p.pod.spec.node_selector == {"pool": "h100"} for p in pods)
    assert all(p.finished_at == 6 * 3600 for p in pods)


def test_the_jobset_carries_the_trainer_s_settings_and_torchrun_s_environment() -> None:
    jobset, notes = trainjob_jobset({**of_kind("TrainJob"), "metadata": {"name": "llm", "namespace": "training",
                                                                          "uid": "u"}}, of_kind("ClusterTrainingRuntime"))
    assert notes == []
    (rjob,) = jobset["spec"]["replicatedJobs"]
    assert rjob["replicas"] == 1
    assert (rjob["template"]["spec"]["parallelism"], rjob["template"]["spec"]["completions"]) == (4, 4)
    (node,) = rjob["template"]["spec"]["template"]["spec"]["containers"]
    assert (node["image"], node["command"]) == ("registry.example.com/llm-pretrain:1.4", ["torchrun", "pretrain.py"])
    env = {e["name"]: e.get("value") for e in node["env"]}
    assert env == {"PET_NNODES": "4", "PET_NPROC_PER_NODE": "8", "PET_NODE_RANK": None,
                   "PET_MASTER_ADDR": "llm-node-0-0.llm", "PET_MASTER_PORT": "29500"}
    assert node["resources"]["claims"] == [{"name": "gpus"}]
    assert jobset["metadata"]["ownerReferences"][0]["kind"] == "TrainJob"


def test_resources_per_node_replace_the_node_container_s_claims_as_v2_3_0_does() -> None:
    trainjob = of_kind("TrainJob")
    trainjob["metadata"]["uid"] = "u"
    trainjob["spec"]["trainer"]["resourcesPerNode"] = {"requests": {"memory": "512Gi"}}
    jobset, _ = trainjob_jobset(trainjob, of_kind("ClusterTrainingRuntime"))
    node = jobset["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]["containers"][0]
    assert node["resources"] == {"requests": {"cpu": "32", "memory": "512Gi"}}


def test_strategic_merge_merges_by_name_appends_new_items_replaces_other_lists() -> None:
    base = {"containers": [{"name": "a", "env": [{"name": "X", "value": "1"}]}], "tolerations": [{"key": "t"}],
            "nodeSelector": {"a": "1", "b": "2"}}
    patch = {"containers": [{"name": "a", "env": [{"name": "Y", "value": "2"}]}, {"name": "b"}],
             "tolerations": [{"key": "u"}], "nodeSelector": {"b": None, "c": "3"}}
    assert strategic_merge(base, patch) == {
        "containers": [{"name": "a", "env": [{"name": "X", "value": "1"}, {"name": "Y", "value": "2"}]},
                       {"name": "b"}],
        "tolerations": [{"key": "u"}], "nodeSelector": {"a": "1", "c": "3"}}


def _with(spec: dict[str, Any]) -> list[dict[str, Any]]:
    out = docs()
    trainjob = next(d for d in out if d["kind"] == "TrainJob")
    trainjob["spec"] = {**trainjob["spec"], **spec}
    return out


def test_a_trainjob_managed_by_multikueue_makes_no_pod_and_says_so() -> None:
    scenario = build_scenario(load_text(yaml.safe_dump_all(_with({"managedBy": "kueue.x-k8s.io/multikueue"}))))
    assert scenario.workloads.jobs == []
    assert any("MultiKueue" in n or "kueue.x-k8s.io/multikueue" in n for n in scenario.notes)


def test_an_mpi_runtime_is_placed_as_its_template_with_a_note() -> None:
    out = docs()
    runtime = next(d for d in out if d["kind"] == "ClusterTrainingRuntime")
    runtime["spec"]["mlPolicy"] = {"numNodes": 2, "mpi": {"numProcPerNode": 1}}
    scenario = build_scenario(load_text(yaml.safe_dump_all(out)))
    assert any("mlPolicy.mpi" in n for n in scenario.notes)
    assert len(scenario.workloads.jobs[0].pods) == 4  # the TrainJob's numNodes


@pytest.mark.parametrize(("spec", "field", "words"), [
    ({"runtimeRef": {"name": "elsewhere"}}, "spec.runtimeRef", "must be created before the TrainJob is created"),
    ({"trainer": {"env": [{"name": "PET_NODE_RANK", "value": "0"}]}}, "spec.trainer.env", "reserved envs"),
    ({"initializer": {"model": {"storageUri": "hf://m"}}}, "spec.runtimeRef",
     "must have model-initializer job when trainJob is configured with input modelConfig"),
])
def test_what_the_webhook_refuses_is_refused_naming_the_field(spec: dict[str, Any], field: str, words: str) -> None:
    with pytest.raises(InvalidInputError) as refused:
        build_scenario(load_text(yaml.safe_dump_all(_with(spec))))
    (problem,) = refused.value.problems
    assert problem.location.field == field and words in problem.message
    assert problem.location.object == "TrainJob/llm"


@pytest.mark.parametrize(("metadata", "field"), [
    ({"name": "llm", "annotations": True}, "metadata.annotations"),
    ({"name": "llm", "labels": {"team": 7}}, "metadata.labels[team]"),
])
def test_metadata_no_api_server_would_hold_is_refused_not_crashed_on(metadata: dict[str, Any], field: str) -> None:
    """A fuzzed TrainJob with ``annotations: true`` crashed the expansion (the CRD's schema leaves metadata to the
    API server's ObjectMeta)."""
    out = docs()
    next(d for d in out if d["kind"] == "TrainJob")["metadata"] = metadata
    with pytest.raises(InvalidInputError) as refused:
        build_scenario(load_text(yaml.safe_dump_all(out)))
    (problem,) = refused.value.problems
    assert problem.location.field == field and problem.location.object == "TrainJob/llm"


def test_a_workload_queued_for_kueue_is_noted_as_admitted_on_arrival() -> None:
    out = docs()
    trainjob = next(d for d in out if d["kind"] == "TrainJob")
    trainjob["metadata"]["labels"] = {"kueue.x-k8s.io/queue-name": "team-a"}
    scenario = build_scenario(load_text(yaml.safe_dump_all(out)))
    (note,) = [n for n in scenario.notes if "Kueue" in n]
    assert note.startswith("1 workload (e.g. TrainJob training/llm (queue team-a)) names a Kueue LocalQueue")
