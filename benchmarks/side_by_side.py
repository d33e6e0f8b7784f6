"""Upstream's allocator and kubedra on the same scheduler_perf workloads, in one run, first-fit on both sides.

Run: ``python benchmarks/side_by_side.py [-n RUNS] [--json] [--quick] [--save [DIR]] [NAME-SUBSTRING | FILE.yaml
...]`` (default: every workload but ``Large/``; a ``.yaml`` argument is a workload file of the same format, run as it
is; ``--quick``: ``benchmarks/simulate.py``'s two tiny workloads, one run). Each side's figures are the medians of
``RUNS``; ``--save`` writes ``benchmarks/results/side_by_side.json``, which ``benchmarks/figures.py`` renders into
docs/performance.md. Each workload is written once with ``benchmarks/workloads.py`` into a temporary folder; then

* the Go harness ``benchmarks/upstream/bin/upstream-bench`` (built by ``benchmarks/upstream/build.sh`` when missing or
  older than its sources) schedules it with k8s.io/dynamic-resource-allocation v0.37.2 the way kube-scheduler's
  DynamicResources Filter does — one Allocator per pod, Allocate on every node in order, first feasible node wins;
* kubedra's simulator schedules the same file in a fresh child process, ``Options(policy=Policy.FIRST_FIT)`` without
  the fragmentation series (``benchmarks/simulate.py`` says why), timed
  as ``benchmarks/simulate.py`` times it (its ``_instrument``): measured pods over the wall time from the first
  measured pod's first attempt to the last measured pod's binding.

Per-node decision time is, on both sides, the time spent deciding measured pods (PreFilter + Filter, not binding)
divided by the nodes a first-fit walk looks at: the chosen node's position + 1 (all nodes when none fits). The Go
harness really calls the allocator that often; kubedra's indexes may skip nodes, so its figure is amortized over the
same count (the counts agree whenever the two sides decide alike). The upstream side also reports the time inside
``Allocate`` alone. Both sides' placements are compared pod by pod; any difference is reported.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from kubedra.objects.load import load_text  # noqa: E402
from kubedra.scheduler.outcome import Placement  # noqa: E402
from kubedra.scheduler.scoring import Policy  # noqa: E402
from kubedra.sim.scenario import build_scenario  # noqa: E402
from kubedra.sim.simulate import Options, prepare  # noqa: E402
from results import RESULTS, ROOT, Recorder, figure  # noqa: E402
from simulate import QUICK_WORKLOADS, _instrument  # noqa: E402
from workloads import MEASURED, WORKLOADS, file_name, to_yaml, write_workload  # noqa: E402

UPSTREAM = HERE / "upstream"
HARNESS = UPSTREAM / "bin" / "upstream-bench"


# ---------------------------------------------------------------------------------------------- upstream (Go)


def ensure_harness() -> Path:
    """Build the Go harness when it is missing or older than any of its sources."""
    shared = UPSTREAM.parent.parent / "tests" / "oracle"  # package kube, used through a replace directive
    sources = [*UPSTREAM.glob("*.go"), UPSTREAM / "go.mod", UPSTREAM / "go.sum", *shared.glob("kube/*.go"),
               shared / "go.mod"]
    if not HARNESS.exists() or HARNESS.stat().st_mtime < max(p.stat().st_mtime for p in sources):
        subprocess.run([str(UPSTREAM / "build.sh")], check=True)
    return HARNESS


def run_upstream(path: Path, workdir: Path) -> tuple[dict[str, Any], dict[str, str]]:
    placements = workdir / f"{path.stem}.upstream-placements.json"
    done = subprocess.run(
        [str(HARNESS), "--placements", str(placements), str(path)], capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise RuntimeError(f"{path.name}: upstream harness failed ({done.returncode}):\n{done.stderr}")
    report: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    placed: dict[str, str] = json.loads(placements.read_text())[report["workload"]]
    return report, placed


# ---------------------------------------------------------------------------------------------- kubedra


def run_kubedra(path: Path) -> dict[str, Any]:
    """One workload in this process: load (untimed), simulate first-fit (timed like benchmarks/simulate.py)."""
    text = path.read_text(encoding="utf-8")
    started = time.perf_counter()
    scenario = build_scenario(load_text(text, source=str(path)))
    load_s = time.perf_counter() - started
    measured: set[str] = set()
    for pod in scenario.workloads.arrivals:
        if pod.pod.metadata.annotations.get(MEASURED) == "true":
            measured.add(f"{pod.pod.metadata.namespace}/{pod.pod.metadata.name}")
    del text
    simulation = prepare(scenario, Options(policy=Policy.FIRST_FIT, fragmentation_samples=0))
    positions = {name: i for i, name in enumerate(simulation.state.nodes)}
    node_count = len(positions)
    tally = _instrument(simulation, measured)
    timed = simulation.scheduler.schedule
    decision = {"seconds": 0.0, "nodes": 0, "attempts": 0}
    clock = time.perf_counter

    def decide(record: Any) -> Any:
        start = clock()
        outcome = timed(record)
        if record.key in measured:
            decision["seconds"] += clock() - start
            decision["attempts"] += 1
            decision["nodes"] += positions[outcome.node] + 1 if isinstance(outcome, Placement) else node_count
        return outcome

    simulation.scheduler.schedule = decide  # type: ignore[method-assign]
    started = time.perf_counter()
    result = simulation.run()
    run_s = time.perf_counter() - started
    pods = result.state.pods
    placed = {key: (rec.pod.spec.node_name or "") if rec.started_at is not None else "" for key, rec in pods.items()}
    scheduled_measured = sum(1 for k in measured if placed.get(k))
    window = tally["last"] - tally["first"] if tally["first"] is not None and tally["last"] is not None else 0.0
    return {
        "pods": len(pods),
        "measured_pods": len(measured),
        "scheduled": sum(1 for v in placed.values() if v),
        "measured_scheduled": scheduled_measured,
        "seconds": window,
        "pods_per_second": scheduled_measured / window if window > 0 else 0.0,
        "attempts": decision["attempts"],
        "nodes_visited": decision["nodes"],
        "decision_us_per_node": decision["seconds"] * 1e6 / decision["nodes"] if decision["nodes"] else 0.0,
        "load_seconds": load_s,
        "run_seconds": run_s,
        "placements": placed,
    }


def kubedra_child(path: Path, workdir: Path) -> tuple[dict[str, Any], dict[str, str]]:
    out = workdir / f"{path.stem}.kubedra.json"
    command = [sys.executable, __file__, "--child", str(path), "--child-out", str(out)]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{path.name}: kubedra child failed ({done.returncode}):\n{done.stderr}")
    report: dict[str, Any] = json.loads(out.read_text())
    placed: dict[str, str] = report.pop("placements")
    return report, placed


# ---------------------------------------------------------------------------------------------- comparison


def compare(upstream: dict[str, str], kubedra: dict[str, str]) -> list[str]:
    """Pods placed differently (a node vs another node, or placed vs not), as readable lines."""
    lines = []
    for pod in sorted(set(upstream) | set(kubedra)):
        a, b = upstream.get(pod, ""), kubedra.get(pod, "")
        if a != b:
            lines.append(f"{pod}: upstream {a or 'unschedulable'}, kubedra {b or 'unschedulable'}")
    return lines


def row(name: str, up: dict[str, Any], kd: dict[str, Any], differences: int) -> dict[str, Any]:
    ratio = kd["pods_per_second"] / up["pods_per_second"] if up["pods_per_second"] else 0.0
    return {
        "workload": name,
        "measured_pods": up["measured_pods"],
        "upstream_pods_per_second": up["pods_per_second"],
        "kubedra_pods_per_second": kd["pods_per_second"],
        "ratio": ratio,
        "upstream_decision_us_per_node": up["decision_us_per_node"],
        "kubedra_decision_us_per_node": kd["decision_us_per_node"],
        "upstream_allocate_us_per_call": up["allocate_us_per_call"],
        "upstream_scheduled": up["scheduled"],
        "kubedra_scheduled": kd["scheduled"],
        "nodes_visited": [up["nodes_visited"], kd["nodes_visited"]],
        "placement_differences": differences,
        "upstream": up,
        "kubedra": kd,
    }


HEADER = (
    f"{'workload':<62} {'pods':>5} {'upstream/s':>10} {'kubedra/s':>10} {'ratio':>7} "
    f"{'us/node up':>10} {'us/node kd':>10} {'Allocate us':>11} {'placed up/kd':>13} {'diff':>5}"
)


def format_row(r: dict[str, Any]) -> str:
    placed = f"{r['upstream_scheduled']}/{r['kubedra_scheduled']}"
    return (
        f"{r['workload']:<62} {r['measured_pods']:>5} {r['upstream_pods_per_second']:>10.0f} "
        f"{r['kubedra_pods_per_second']:>10.0f} {r['ratio']:>6.1f}x {r['upstream_decision_us_per_node']:>10.1f} "
        f"{r['kubedra_decision_us_per_node']:>10.1f} {r['upstream_allocate_us_per_call']:>11.1f} "
        f"{placed:>13} {r['placement_differences']:>5}"
    )


TIMED = ("pods_per_second", "decision_us_per_node", "allocate_us_per_call")


def median(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The first run, its timings replaced by the runs' medians (decisions do not depend on the run)."""
    return {**runs[0], **{k: statistics.median(r[k] for r in runs) for k in TIMED if k in runs[0]}}


def saved_row(r: dict[str, Any], ups: list[dict[str, Any]], kds: list[dict[str, Any]]) -> dict[str, Any]:
    """What ``--save`` keeps of a workload: every run's timings beside their median, and both sides' decisions."""
    return {"workload": r["workload"], "measured_pods": r["measured_pods"],
            "upstream_pods_per_s": figure([u["pods_per_second"] for u in ups]),
            "kubedra_pods_per_s": figure([k["pods_per_second"] for k in kds]),
            "upstream_decision_us_per_node": figure([u["decision_us_per_node"] for u in ups]),
            "kubedra_decision_us_per_node": figure([k["decision_us_per_node"] for k in kds]),
            "upstream_allocate_us_per_call": figure([u["allocate_us_per_call"] for u in ups]),
            "upstream_scheduled": r["upstream_scheduled"], "kubedra_scheduled": r["kubedra_scheduled"],
            "placement_differences": r["placement_differences"]}


def workload_file(name: str | Path, workdir: Path) -> Path:
    """A ``.yaml`` argument as it is; a workload's manifests written into ``workdir``."""
    if isinstance(name, Path):
        return name
    if name in QUICK_WORKLOADS:
        path = workdir / file_name(name)
        path.write_text(to_yaml(QUICK_WORKLOADS[name]()), encoding="utf-8")
        return path
    return write_workload(name, workdir)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("names", nargs="*", help="substrings of workload names (default: all but Large/)")
    parser.add_argument("-n", "--runs", type=int, default=1, help="runs per side; pages show the medians")
    parser.add_argument("--json", action="store_true", help="print the rows as JSON too")
    parser.add_argument("--quick", action="store_true", help="two tiny workloads, one run: checks the script")
    parser.add_argument("--save", type=Path, nargs="?", const=RESULTS, metavar="DIR",
                        help=f"write DIR/side_by_side.json (default DIR: {RESULTS.relative_to(ROOT)}), read by the "
                             "docs")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--child-out", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        Path(args.child_out).write_text(json.dumps(run_kubedra(Path(args.child))))
        return 0
    files = [Path(n) for n in args.names if n.endswith((".yaml", ".yml"))]
    wanted = [n for n in args.names if not n.endswith((".yaml", ".yml"))]
    names: list[str | Path] = [
        n for n in WORKLOADS if (any(s in n for s in wanted) if wanted else not files and not n.startswith("Large/"))
    ]
    names += files
    runs = args.runs
    if args.quick:
        names, runs = list(QUICK_WORKLOADS), 1
    if not names:
        print(f"no workload matches {args.names}; known: {', '.join(WORKLOADS)}", file=sys.stderr)
        return 2
    try:
        ensure_harness()
    except (OSError, subprocess.CalledProcessError) as err:
        print(f"side_by_side: cannot build the Go harness ({err}); see benchmarks/upstream/README.md", file=sys.stderr)
        return 2
    print(f"# {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f} at start; first-fit on both sides; "
          f"median of {runs}; upstream = k8s.io/dynamic-resource-allocation v0.37.2", flush=True)
    print(HEADER)
    print("-" * len(HEADER), flush=True)
    rows = []
    recorder = Recorder("side_by_side", {"runs": runs, "quick": args.quick})
    status = 0
    with tempfile.TemporaryDirectory(prefix="kubedra-side-by-side-") as tmp:
        workdir = Path(tmp)
        for name in names:
            path = workload_file(name, workdir)
            try:
                ups = [run_upstream(path, workdir) for _ in range(runs)]
                kds = [kubedra_child(path, workdir) for _ in range(runs)]
            except RuntimeError as err:
                print(f"  ! {err}", flush=True)
                status = 2
                continue
            up_placed, kd_placed = ups[0][1], kds[0][1]  # decisions do not depend on the run
            up = median([u for u, _ in ups])
            kd = median([k for k, _ in kds])
            differences = compare(up_placed, kd_placed)
            r = row(name if isinstance(name, str) else str(up["workload"]), up, kd, len(differences))
            rows.append(r)
            recorder.add(saved_row(r, [u for u, _ in ups], [k for k, _ in kds]))
            print(format_row(r), flush=True)
            if up["scheduled"] != kd["scheduled"]:
                status = 1
                print(f"  ! placed pods differ: upstream {up['scheduled']}, kubedra {kd['scheduled']}", flush=True)
            if up.get("errors"):
                print(f"  ! upstream errors: {up['errors']} (first: {up.get('first_error')})", flush=True)
            for line in differences[:5]:
                print(f"  ~ {line}", flush=True)
            if len(differences) > 5:
                print(f"  ~ ... and {len(differences) - 5} more", flush=True)
            if not isinstance(name, Path):
                path.unlink()
    print(f"# load average {os.getloadavg()[0]:.2f} at end")
    if args.json:
        print(json.dumps(rows, indent=2))
    if args.save:
        print(f"# wrote {recorder.save(args.save)}")
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
