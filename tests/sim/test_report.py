"""The report's summary: physical GPUs (not devices), their peak use over the run, and how long pods waited."""

from __future__ import annotations

from fixtures.scenarios import claim_template, controller, job, nodepool, pod, resource_claim, run

from kubedra.sim.report import percentile

HOUR = 3600.0
PROFILE = "device.attributes['gpu.nvidia.com'].profile == '{}'"


def _model(summary: dict[str, object], model: str) -> dict[str, object]:
    gpus = summary["gpus"]
    assert isinstance(gpus, dict)
    rows = [m for m in gpus["models"] if m["model"] == model]
    assert len(rows) == 1, gpus["models"]
    return dict(rows[0])


def test_a_mig_node_counts_its_physical_gpus_not_its_placement_devices() -> None:
    sim = run(
        nodepool("a100", gpus=8, model="A100-40GB", mig=True),
        claim_template("half", device_class="mig.nvidia.com", selector=PROFILE.format("3g.20gb")),
        claim_template("small", device_class="mig.nvidia.com", selector=PROFILE.format("1g.5gb")),
        pod("half-a", template="half"),
        pod("half-b", template="half"),
        pod("small", template="small"),
    )
    devices = sum(d["total"] for d in sim.summary["devices"])
    assert devices > 100  # the MIG placement devices, as the old summary counted them
    row = _model(sim.summary, "NVIDIA A100-SXM4-40GB")
    assert row["total"] == 8
    assert row["migCapable"] == 8
    # Both 3g.20gb placements of one GPU are taken first (least-allocated scores the node, not the GPU); the 1g.5gb
    # device lands on a GPU of its own or the same one: either way the MIG-partitioned GPUs are the GPUs in use.
    assert row["migPartitioned"] == row["inUse"]
    assert row["inUse"] in (1, 2, 3)
    assert row["whole"] == 0
    gpus = sim.summary["gpus"]
    assert gpus["total"] == 8
    assert gpus["migPartitioned"] == row["inUse"]


def test_shared_and_whole_gpus_are_told_apart() -> None:
    sim = run(
        nodepool("shared", gpus=2, shares=4),
        nodepool("whole", gpus=2, model="H100-80GB"),
        claim_template("one-gpu"),
        claim_template("h100", selector="device.attributes['gpu.nvidia.com'].productName.contains('H100')"),
        controller("Deployment", "infer", 3, template="one-gpu", nodeSelector={"kubernetes.io/hostname": "shared-0"}),
        pod("train", template="h100"),
    )
    gpus = sim.summary["gpus"]
    assert gpus["total"] == 4
    assert gpus["inUse"] == 1 + len({sim.allocated_devices(c)[0] for c in sim.claims if c.startswith("infer-")})
    assert gpus["whole"] == 1
    assert gpus["shared"] == gpus["inUse"] - 1
    assert _model(sim.summary, "NVIDIA H100 80GB HBM3")["whole"] == 1


def test_peak_gpu_use_is_the_most_gpus_busy_at_one_instant_and_when() -> None:
    sim = run(
        nodepool("gpu", gpus=4),
        claim_template("one-gpu"),
        claim_template("two-gpus", count=2),
        pod("early", template="one-gpu", run_for="1h"),
        pod("pair", template="two-gpus", start_after="10m", run_for="1h"),
        pod("late", template="one-gpu", start_after="2h", run_for="1h"),
    )
    gpus = sim.summary["gpus"]
    assert gpus["peakInUse"] == 3  # early + pair overlap from 10m to 1h; late runs alone
    assert gpus["peakTime"] == "10m"
    assert gpus["peakSeconds"] == 600.0
    assert gpus["inUse"] == 0  # everything finished
    assert _model(sim.summary, "NVIDIA A100-SXM4-40GB")["peakInUse"] == 3


def test_a_gpu_freed_and_taken_at_the_same_instant_is_not_counted_twice() -> None:
    sim = run(
        nodepool("gpu", gpus=1),
        claim_template("one-gpu"),
        pod("a", template="one-gpu", run_for="1h"),
        pod("b", template="one-gpu", start_after="1m", run_for="1h"),
    )
    assert sim.summary["gpus"]["peakInUse"] == 1


def test_a_claim_allocated_in_the_input_counts_from_the_start() -> None:
    sim = run(
        nodepool("gpu", gpus=2),
        claim_template("one-gpu"),
        resource_claim("shared-claim"),
        pod("holder", claim="shared-claim", run_for="1h"),
        pod("other", template="one-gpu", start_after="30m", run_for="1h"),
    )
    gpus = sim.summary["gpus"]
    assert gpus["peakInUse"] == 2
    assert gpus["peakTime"] == "30m"


def test_device_plugin_gpus_are_counted_and_used_by_the_pods_bound_there() -> None:
    sim = run(
        nodepool("legacy", gpus=4, device_plugin=True),
        job("tune", parallelism=2, completions=2, run_for="1h", requests={"nvidia.com/gpu": "2"},
            limits={"nvidia.com/gpu": "2"}),
    )
    row = _model(sim.summary, "nvidia.com/gpu (device plugin)")
    assert row["total"] == 4
    assert row["devicePlugin"] == 4
    assert row["peakInUse"] == 4
    assert row["inUse"] == 0  # the Job succeeded


def test_pending_time_per_pod_p50_p99_and_the_longest_waiters() -> None:
    sim = run(
        nodepool("gpu", gpus=1),
        claim_template("one-gpu"),
        pod("first", template="one-gpu", run_for="1h"),
        pod("second", template="one-gpu", run_for="1h"),
        pod("third", template="one-gpu", run_for="1h"),
        pod("never", template="one-gpu", start_after="3h", run_for="1h"),
    )
    waited = sim.summary["pendingTime"]
    # first 0s; second waits 1h; third 2h; "never" arrives at 3h when the GPU is free: 0s.
    assert waited["pods"] == 4
    assert waited["p50"] == "0s"
    assert waited["p99"] == "2h"
    assert waited["max"] == "2h"
    assert waited["maxSeconds"] == 2 * HOUR
    assert [(w["pod"], w["waited"], w["stillPending"]) for w in waited["longest"]] == [
        ("default/third", "2h", False),
        ("default/second", "1h", False),
    ]


def test_a_pod_still_pending_counts_its_wait_up_to_the_end() -> None:
    sim = run(
        nodepool("gpu", gpus=1),
        claim_template("one-gpu"),
        pod("holder", template="one-gpu"),
        pod("stuck", template="one-gpu"),
        pod("late", template="one-gpu", start_after="1h"),
    )
    longest = sim.summary["pendingTime"]["longest"]
    assert [(w["pod"], w["seconds"], w["stillPending"]) for w in longest] == [("default/stuck", HOUR, True)]


def test_nearest_rank_percentiles() -> None:
    values = [float(v) for v in range(1, 101)]
    assert percentile(values, 0.5) == 50.0
    assert percentile(values, 0.99) == 99.0
    assert percentile([7.0], 0.99) == 7.0
    assert percentile([], 0.5) == 0.0
