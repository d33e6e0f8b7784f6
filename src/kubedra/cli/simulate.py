"""``kubedra simulate``: a GPU cluster scheduled with DRA over simulated time — the main job."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from kubedra.cli.options import GatesOption, OutputOption, PolicyOption, ScenarioFiles, SeedOption, VersionOption
from kubedra.cli.output import (
    EXIT_INVALID_INPUT,
    EXIT_OK,
    EXIT_UNSCHEDULABLE,
    OutputFormat,
    default_format,
    fail_invalid,
    print_data,
    print_warnings,
    stderr_console,
    stdout_console,
)
from kubedra.scheduler.scoring import Policy

HELP = " ".join(
    [
        "Schedule a GPU cluster's workloads with DRA over simulated time and report where everything landed.\n\n",
        "Inputs are plain Kubernetes manifests (files or directories, repeatable; - for stdin): Nodes and",
        "ResourceSlices or kubedra's compact NodePool inventory, DeviceClasses (NVIDIA's chart defaults are built",
        "in), ResourceClaims, ResourceClaimTemplates, DeviceTaintRules, Pods, Deployments, StatefulSets, ReplicaSets",
        "and Jobs. Pods arrive after the annotation kubedra.io/start-after (e.g. 10m) and run for",
        "kubedra.io/run-for (e.g. 2h; absent: forever).\n\n",
        "With no -f, the seed article's objects run on a built-in demo cluster of A100 and H100 nodes.\n\n",
        "Examples: [bold]kubedra simulate[/bold] · [bold]kubedra simulate -f cluster/ -f workloads/",
        "--policy most-allocated -o yaml > final.yaml[/bold]\n\n",
        "Exit status: 0 when the simulation ran (1 with --fail-on-pending if a pod stayed pending), 2 for bad input.",
    ]
)


def default_inputs() -> list[str]:
    from kubedra.data import seed_dir

    data = seed_dir().parent
    return [str(seed_dir()), str(Path(data) / "demo")]


def load_scenario(files: list[str] | None, seed: int, version: str, gates: str) -> tuple[Any, Any, Any]:
    """(loaded objects, scenario, features) for ``simulate`` and ``explain``; exits 2 on bad input."""
    from kubedra.allocator import FeatureGateError, Features, parse_gates
    from kubedra.objects.errors import InvalidInputError
    from kubedra.objects.load import load_paths
    from kubedra.sim.scenario import build_scenario

    try:
        features = Features.for_release(version).with_gates(parse_gates(gates))
    except FeatureGateError as exc:
        stderr_console().print(f"error: {exc}", highlight=False, markup=False)
        raise typer.Exit(EXIT_INVALID_INPUT) from exc
    try:
        loaded = load_paths(files or default_inputs())
        scenario = build_scenario(loaded, seed=seed)
    except InvalidInputError as exc:
        fail_invalid(exc)
    return loaded, scenario, features


def _progress_run(run: Any, total_hint: int, show: bool) -> Any:
    if not show:
        return run(None)
    with Progress(
        TextColumn("simulating"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("pods scheduled"),
        TimeElapsedColumn(),
        console=stderr_console(),
        transient=True,
    ) as progress:
        task = progress.add_task("simulate", total=total_hint)

        def update(done: int, total: int) -> None:
            progress.update(task, completed=done, total=total)

        return run(update)


def _table(report: Any, console: Console) -> None:
    pods = Table(title="Pods", title_justify="left", show_edge=False, pad_edge=False)
    for column in ("POD", "PHASE", "NODE", "DEVICES / REASON"):
        pods.add_column(column, overflow="fold")
    for line in report.pods:
        detail = ", ".join(line.devices) if line.devices else line.reason
        pods.add_row(line.pod, line.phase, line.node or "-", detail or "-")
    console.print(pods)
    summary = report.summary
    devices = Table(title="GPUs", title_justify="left", show_edge=False, pad_edge=False)
    for column in ("MODEL", "TOTAL", "ALLOCATED", "SHARED"):
        devices.add_column(column)
    for row in summary["devices"]:
        devices.add_row(row["model"], str(row["total"]), str(row["allocated"]), str(row["sharedDevices"]))
    console.print(devices)
    p, c = summary["pods"], summary["claims"]
    console.print(
        f"pods: {p['running']} running, {p['succeeded']} succeeded, {p['deleted']} deleted, {p['pending']} pending "
        f"of {p['total']}; "
        f"claims: {c['allocated']} allocated, {c['pending']} pending; shares in use: {summary['shares']}; "
        f"simulated time: {summary['simulatedTime']}",
        highlight=False,
    )


def register(app: typer.Typer) -> None:
    @app.command("simulate", help=HELP)
    def simulate_command(
        files: ScenarioFiles = None,
        policy: PolicyOption = Policy.KUBE_SCHEDULER,
        seed: SeedOption = 0,
        kubernetes_version: VersionOption = "1.37",
        feature_gates: GatesOption = "",
        output: OutputOption = None,
        fail_on_pending: Annotated[
            bool, typer.Option("--fail-on-pending", help="Exit 1 if any pod is still pending at the end.")
        ] = False,
        exact: Annotated[
            bool, typer.Option("--exact", help="Run the allocator on every node (no index); slower, same decisions.")
        ] = False,
    ) -> None:
        from kubedra.sim.report import build_report
        from kubedra.sim.simulate import Options, prepare

        loaded, scenario, features = load_scenario(files, seed, kubernetes_version, feature_gates)
        print_warnings(loaded.warnings)
        for note in scenario.notes:
            stderr_console().print(f"[yellow]Note:[/yellow] {note}", highlight=False)
        options = Options(policy=policy, seed=seed, features=features, fast_path=not exact)
        simulation = prepare(scenario, options)
        fmt = output or default_format()
        total = len(scenario.workloads.arrivals) + sum(len(j.pods) for j in scenario.workloads.jobs)
        result = _progress_run(simulation.run, total, show=stderr_console().is_terminal and total >= 200)
        report = build_report(result, [str(w) for w in loaded.warnings] + scenario.notes)
        if fmt is OutputFormat.table:
            _table(report, stdout_console())
        else:
            print_data(report.as_document(), fmt)
        pending = report.summary["pods"]["pending"]
        raise typer.Exit(EXIT_UNSCHEDULABLE if fail_on_pending and pending else EXIT_OK)
