"""CronJobs in simulated time (``kubedra.sim.cronjobs``), read from ``-o json`` as a user reads it: which Jobs the
controller makes on ``*/5 * * * *`` for Jobs that run 7 minutes, under each concurrencyPolicy, suspended, with a
startingDeadlineSeconds, with their names (``<cronjob>-<minutes since the epoch>``) and horizon; and the
API server's checks of the schedule, the zone and the policy."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from fixtures.scenarios import Run, nodepool, pod_spec, run

from kubedra.cli import main
from kubedra.objects.errors import InvalidInputError
from kubedra.objects.load import load_text
from kubedra.sim.cron import controller_schedule, parse_standard
from kubedra.sim.cronjobs import most_recent
from kubedra.sim.scenario import build_scenario

START = 1767225600  # 2026-01-01T00:00:00Z, the default simulation start
MINUTE = 60


def cronjob(name: str = "tick", schedule: str = "*/5 * * * *", *, job_run_for: str = "7m", until: str = "30m",
            policy: str | None = None, gpu: bool = True, **spec: Any) -> dict[str, Any]:
    template = {"metadata": {"annotations": {"kubedra.io/run-for": job_run_for}},
                "spec": pod_spec(restart="Never", template="one-gpu" if gpu else None)}
    body: dict[str, Any] = {"schedule": schedule, "jobTemplate": {"spec": {"template": template}}, **spec}
    if policy is not None:
        body["concurrencyPolicy"] = policy
    return {"apiVersion": "batch/v1", "kind": "CronJob",
            "metadata": {"name": name, "annotations": {"kubedra.io/run-for": until}}, "spec": body}


TEMPLATE = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate", "metadata": {"name": "one-gpu"},
            "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
                "deviceClassName": "gpu.nvidia.com"}}]}}}}


def simulate(*docs: dict[str, Any]) -> Run:
    return run(nodepool("n", gpus=8), TEMPLATE, *docs)


def jobs_created(sim: Run) -> dict[str, float]:
    return sim.times("Job", "Created")


def job_name(minutes_after_start: int, name: str = "tick") -> str:
    return f"{name}-{(START + minutes_after_start * MINUTE) // 60}"


def pods_of(sim: Run, job: str) -> list[str]:
    return [n for n, p in sim.pods.items() if p["metadata"]["labels"].get("job-name") == job]


def test_allow_makes_a_job_at_every_scheduled_time_and_they_overlap() -> None:
    sim = simulate(cronjob())
    assert jobs_created(sim) == {job_name(m): m * MINUTE for m in (5, 10, 15, 20, 25, 30)}
    first = pods_of(sim, job_name(5))
    assert len(first) == 1
    assert sim.phase(first[0]) == "Succeeded"
    assert sim.timeline(f"Pod {first[0]}") == [(300.0, "Scheduled"), (720.0, "Finished")]
    second = pods_of(sim, job_name(10))[0]
    assert sim.timeline(f"Pod {second}")[0] == (600.0, "Scheduled")  # while the first still runs
    owner = sim.pods[first[0]]["metadata"]["ownerReferences"][0]
    assert (owner["kind"], owner["name"]) == ("Job", job_name(5))


def test_forbid_skips_while_a_job_is_active_then_starts_the_missed_one_when_it_finishes() -> None:
    sim = simulate(cronjob(policy="Forbid"))
    # 5m: made, runs to 12m; 10m: skipped (active); 12m: it finishes and the controller makes the 10m Job late;
    # 15m: skipped (the 10m Job runs to 19m); 19m: the 15m Job; 20m, 25m skipped; 26m: the 25m Job.
    assert jobs_created(sim) == {job_name(5): 300.0, job_name(10): 720.0, job_name(15): 1140.0,
                                 job_name(25): 1560.0}
    skipped = [e["seconds"] for e in sim.events if e["type"] == "JobAlreadyActive"]
    assert skipped == [600.0, 900.0, 1200.0, 1500.0, 1800.0]


def test_forbid_with_a_starting_deadline_skips_missed_times_older_than_it() -> None:
    sim = simulate(cronjob(policy="Forbid", startingDeadlineSeconds=60))
    # The 10m time is 2 minutes old when the 5m Job finishes at 12m: older than the deadline, the controller does
    # not look that far back; the next Job is the 15m one (and the 20m one is likewise lost at 22m).
    assert jobs_created(sim) == {job_name(5): 300.0, job_name(15): 900.0, job_name(25): 1500.0}
    assert [e["seconds"] for e in sim.events if e["type"] == "JobAlreadyActive"] == [600.0, 1200.0, 1800.0]


def test_replace_deletes_the_active_job_and_its_pods_then_makes_the_new_one() -> None:
    sim = simulate(cronjob(policy="Replace"))
    assert jobs_created(sim) == {job_name(m): m * MINUTE for m in (5, 10, 15, 20, 25, 30)}
    deleted_jobs = sim.times("Job", "Deleted")
    assert deleted_jobs == {job_name(m): (m + 5) * MINUTE for m in (5, 10, 15, 20, 25)}
    first = sorted({e["object"] for e in sim.events if e["object"].startswith(f"Pod default/{job_name(5)}-")})
    assert len(first) == 1  # deleted pods leave the output's objects; their events stay
    assert [(e["seconds"], e["type"]) for e in sim.events if e["object"] == first[0]] == [
        (300.0, "Scheduled"), (630.0, "Deleted")]  # deleted at 10m, gone after the default 30 s grace period
    last = pods_of(sim, job_name(30))[0]
    assert sim.timeline(f"Pod {last}") == [(1800.0, "Scheduled"), (2220.0, "Finished")]


def test_suspend_makes_no_job() -> None:
    sim = simulate(cronjob(suspend=True))
    assert jobs_created(sim) == {}
    assert sim.pods == {}


def test_the_horizon_and_the_clock_come_from_the_cronjob_annotations() -> None:
    cron = cronjob(schedule="0 9 * * MON-FRI", job_run_for="1h", until="168h", gpu=False)
    cron["metadata"]["annotations"]["kubedra.io/simulation-start"] = "2026-03-06T08:00:00+01:00"  # a Friday
    cron["spec"]["timeZone"] = "Europe/Berlin"
    sim = simulate(cron)
    start = 1772780400  # 2026-03-06T07:00:00Z
    days = [0, 3, 4, 5, 6]  # Fri, the weekend skipped, Mon-Thu; the next Friday's 09:00 is past the 168h
    created = jobs_created(sim)
    assert list(created.values()) == [3600.0 + d * 86400 for d in days]
    assert list(created) == [f"tick-{(start + 3600 + d * 86400) // 60}" for d in days]
    stamps = [e["message"] for e in sim.events if e["type"] == "Created" and e["object"].startswith("Job ")]
    assert stamps[0] == "CronJob default/tick scheduled it for 2026-03-06T09:00:00+01:00"


def test_without_run_for_the_schedule_stops_when_the_other_workloads_are_known_to_end() -> None:
    cron = cronjob(gpu=False)
    del cron["metadata"]["annotations"]
    other = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "annotations": {
        "kubedra.io/start-after": "10m", "kubedra.io/run-for": "7m"}}, "spec": pod_spec()}
    assert list(jobs_created(simulate(cron, other)).values()) == [300.0, 600.0, 900.0]
    alone = cronjob("daily", "@daily", gpu=False)
    del alone["metadata"]["annotations"]
    assert list(jobs_created(simulate(alone)).values()) == [86400.0]  # nothing else: one day


def _problems(doc: dict[str, Any]) -> list[str]:
    with pytest.raises(InvalidInputError) as caught:
        build_scenario(load_text(yaml.safe_dump(doc), source="c.yaml"))
    return [str(p) for p in caught.value.problems]


def test_bad_schedules_zones_and_policies_are_refused_naming_the_field() -> None:
    assert _problems(cronjob(schedule="*/5 * * *")) == [
        'c.yaml[0]: CronJob/tick: spec.schedule: Invalid value: "*/5 * * *": expected exactly 5 fields, found 4: '
        "[*/5 * * *]"]
    assert _problems(cronjob(schedule="0 25 * * *")) == [
        'c.yaml[0]: CronJob/tick: spec.schedule: Invalid value: "0 25 * * *": end of range (25) above maximum (23): 25']
    assert _problems(cronjob(schedule="TZ=UTC 0 * * * *")) == [
        'c.yaml[0]: CronJob/tick: spec.schedule: Invalid value: "TZ=UTC 0 * * * *": cannot use TZ or CRON_TZ in '
        "schedule, use timeZone field instead"]
    assert _problems(cronjob(timeZone="Mars/Olympus")) == [
        'c.yaml[0]: CronJob/tick: spec.timeZone: Invalid value: "Mars/Olympus": unknown time zone Mars/Olympus']
    assert _problems(cronjob(timeZone="Local")) == [
        'c.yaml[0]: CronJob/tick: spec.timeZone: Invalid value: "Local": timeZone must be an explicit time zone as '
        "defined in https://www.iana.org/time-zones"]
    assert _problems(cronjob(policy="Sometimes")) == [
        'c.yaml[0]: CronJob/tick: spec.concurrencyPolicy: Unsupported value: "Sometimes": supported values: '
        '"Allow", "Forbid", "Replace"']
    assert _problems(cronjob(startingDeadlineSeconds=-1)) == [
        "c.yaml[0]: CronJob/tick: spec.startingDeadlineSeconds: Invalid value: -1: must be greater than or equal to 0"]
    assert _problems(cronjob(schedule="@every 1s", until="24h")) == [
        'c.yaml[0]: CronJob/tick: spec.schedule: Invalid value: "@every 1s": schedules more than 10000 Jobs by '
        "86400s of simulated time; kubedra simulates at most 10000 per CronJob (set kubedra.io/run-for on the "
        "CronJob to stop it sooner)"]


def test_day_of_month_and_day_of_week_are_either_when_both_are_restricted() -> None:
    both = parse_standard("0 0 13 * FRI")  # the 13th or any Friday
    starred = parse_standard("0 0 */1 * FRI")  # */1 keeps the star: Fridays only
    stepped = parse_standard("0 0 */2 * FRI")  # a step over 1 drops it: odd days or Fridays
    jan = START  # Thursday 2026-01-01
    days = [(t - jan) // 86400 + 1 for t in _times(both, jan, 4)]
    assert days == [2, 9, 13, 16]
    assert [(t - jan) // 86400 + 1 for t in _times(starred, jan, 3)] == [2, 9, 16]
    assert [(t - jan) // 86400 + 1 for t in _times(stepped, jan, 3)] == [2, 3, 5]


def _times(schedule: Any, after: int, count: int) -> list[int]:
    out: list[int] = []
    t = after
    for _ in range(count):
        t = schedule.next(t)
        out.append(t)
    return out


def test_most_recent_schedule_time_is_the_controllers() -> None:
    every5 = controller_schedule("*/5 * * * *", None)
    assert most_recent(every5, START, START + 299) == (None, False, False)
    assert most_recent(every5, START, START + 300) == (START + 300, False, False)
    assert most_recent(every5, START, START + 3 * 3600 + 1) == (START + 3 * 3600, True, False)
    assert most_recent(parse_standard("0 0 30 2 *"), START, START + 10**8) == (None, False, True)


def test_simulate_refuses_a_bad_schedule_with_exit_2_naming_file_object_and_field(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "cron.yaml"
    path.write_text(yaml.safe_dump(cronjob(schedule="*/5 * * 13 *")))
    assert main(["simulate", "-f", str(path)]) == 2
    err = capsys.readouterr().err
    assert f'{path}[0]: CronJob/tick: spec.schedule: Invalid value: "*/5 * * 13 *": end of range (13) above maximum ' \
           "(12): 13" in " ".join(err.split())
