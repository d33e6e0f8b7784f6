"""``kubedra simulate``: a GPU cluster scheduled with DRA over simulated time — the main job."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from kubedra.cli.collector import batch_collection
from kubedra.cli.helptext import command_help
from kubedra.cli.options import (
    ContextOption,
    GatesOption,
    KubeconfigOption,
    MaxFileSizeOption,
    NoHeadersOption,
    OutputOption,
    PolicyOption,
    QuietOption,
    RecursiveOption,
    ScenarioFiles,
    SeedOption,
    VersionOption,
    parse_features,
    parse_limits,
)
from kubedra.cli.output import (
    EXIT_OK,
    EXIT_UNSCHEDULABLE,
    TABLE_FORMATS,
    Column,
    OutputFormat,
    Table,
    default_format,
    fail,
    fail_invalid,
    print_data,
    print_lines,
    print_names,
    print_table,
    print_warnings,
    resource_name,
    stderr_console,
)
from kubedra.cli.simulate_report import duration, print_report, summary_lines
from kubedra.scheduler.scoring import Policy

HELP = command_help(
    "Schedule a GPU cluster's workloads with DRA over simulated time and report where everything landed.",
    "Inputs are plain Kubernetes manifests (files or directories, repeatable; - for stdin): Nodes and ResourceSlices "
    "or kubedra's compact NodePool inventory, DeviceClasses (NVIDIA's chart defaults are built in), ResourceClaims, "
    "ResourceClaimTemplates, DeviceTaintRules, Pods, Deployments, StatefulSets, ReplicaSets, DaemonSets (a pod per "
    "eligible node), Jobs and CronJobs (Jobs on their schedule from 2026-01-01T00:00:00Z or the CronJob's "
    "kubedra.io/simulation-start; docs/reference/inputs.md), PriorityClasses "
    "and PodDisruptionBudgets (priority preemption), Workloads and PodGroups (gangs, with --feature-gates "
    "GenericWorkload=true; docs/gangs-and-preemption.md). Pods arrive "
    "after the annotation kubedra.io/start-after (e.g. 10m) and run for kubedra.io/run-for (e.g. 2h; absent: "
    "forever). With no -f, the seed article's objects run on a built-in demo cluster of A100 and H100 nodes.",
    "With --kubeconfig (or --context) the run starts from that live cluster's state, read only: bound pods stay where "
    "they are, allocated claims stay allocated, and -f adds workloads on top (a what-if; nothing is written to the "
    "cluster).",
    "Output: a table of pods (NAMESPACE NAME STATUS NODE DEVICES WAITED REASON, by namespace and name; -o wide adds "
    "CLAIMS ARRIVED STARTED FINISHED), a table of physical GPUs per model (in use at the end, whole, MIG-partitioned, "
    "shared, peak over the run) and a summary (pods, claims, peak GPU use, pending time p50/p99/max, longest "
    "waiters). --no-headers prints the pod rows alone; -o name prints pod/NAME per pod (kubectl's form: no "
    "namespace); -o json|yaml prints the final state as Kubernetes objects (items), the summary and the events.",
    examples=[
        "kubedra simulate",
        "kubedra simulate -q -o wide",
        "kubedra simulate -q --no-headers | awk '$3 == \"Running\" {print $4}' | sort | uniq -c",
        "kubedra simulate -f src/kubedra/data/demo -f src/kubedra/data/seed --policy most-allocated -o yaml"
        " > final.yaml",
        "kubedra simulate -q -o name",
        "kubedra simulate -q --fail-on-pending",
        "kubedra simulate --kubeconfig ~/.kube/config -f src/kubedra/data/seed -q   # a what-if on a live cluster",
        "kubedra simulate -f examples/workloads/gang.yaml --feature-gates GenericWorkload=true -q",
        "kubedra simulate -f examples/workloads/preemption.yaml -q",
        "kubedra simulate -f examples/plan --compare policy:kube-scheduler policy:fgd",
    ],
    exit_status="0 when the simulation ran (1 with --fail-on-pending if a pod stayed pending), 2 for bad input.",
)

PROGRESS_FROM = 200  # pods; smaller runs finish before a bar is worth drawing


def default_inputs() -> list[str]:
    from kubedra.data import seed_dir

    data = seed_dir().parent
    return [str(seed_dir()), str(Path(data) / "demo")]


def load_scenario(
    files: list[str] | None,
    seed: int,
    version: str,
    gates: str,
    kubeconfig: str | None = None,
    context: str | None = None,
    *,
    api_validation: bool = True,
    limits: Any = None,
    recursive: bool = False,
) -> tuple[Any, Any, Any]:
    """(loaded objects, scenario, features) for ``simulate``, ``explain`` and ``allocate``; exits 2 on bad input.

    With ``kubeconfig`` or ``context`` the scenario starts from the live cluster (read only), and ``files`` are
    added on top of it (a what-if) instead of replacing the built-in demo.
    """
    from kubedra.objects.errors import InvalidInputError
    from kubedra.objects.load import load_paths
    from kubedra.sim.scenario import build_scenario

    features = parse_features(version, gates)
    live_controllers = None
    try:
        if kubeconfig is not None or context is not None:
            from kubedra.cli.live import read_live
            from kubedra.kube.read import to_loaded

            documents = read_live(kubeconfig, context)
            loaded = to_loaded(documents, files or [])
            live_controllers = documents.controllers()
        else:
            loaded = load_paths(files or default_inputs(), api_validation=api_validation, limits=limits,
                                recursive=recursive)
        if api_validation:
            from kubedra.sim.validation import selector_problems

            bad_selectors = selector_problems(loaded, features)
            if bad_selectors:  # the API server refuses these objects; the allocator could never match them
                raise InvalidInputError(bad_selectors)
        scenario = build_scenario(loaded, seed=seed, generic_workload=features.generic_workload,
                                  workload_claims=features.workload_resource_claims)
        if live_controllers is not None:  # the cluster's controllers, for PodTopologySpread's default selector
            from kubedra.sim.services import cluster_controllers

            scenario.cluster_controllers, notes = cluster_controllers(live_controllers)
            scenario.notes.extend(notes)
    except InvalidInputError as exc:
        fail_invalid(exc)
    return loaded, scenario, features


def _progress_run(run: Any, show: bool) -> Any:
    """The run, with a progress bar on a terminal; its total comes from the simulation, fixed before the first pod."""
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
        task = progress.add_task("simulate", total=None)

        def update(done: int, total: int) -> None:
            progress.update(task, completed=min(done, total), total=total)

        return run(update)


def _compare(sides: tuple[str, str], files: list[str] | None, seed: int, version: str, gates: str, policy: Policy,
             exact: bool, fmt: OutputFormat) -> None:
    """``--compare A B``: both runs, then their figures side by side and the pods placed differently."""
    from kubedra.sim.compare import compare
    from kubedra.sim.report import build_report
    from kubedra.sim.simulate import Options, simulate

    reports = []
    for side in sides:
        side_policy, side_files = policy, files
        if side.startswith("policy:"):
            try:
                side_policy = Policy(side.removeprefix("policy:"))
            except ValueError:
                fail(f"--compare {side!r}: unknown policy; use one of {', '.join(p.value for p in Policy)}")
        else:
            side_files = [side]
        _, scenario, features = load_scenario(side_files, seed, version, gates)
        result = simulate(scenario, Options(policy=side_policy, seed=seed, features=features, fast_path=not exact))
        reports.append(build_report(result))
    document = compare(reports[0], reports[1], sides)
    if fmt in TABLE_FORMATS:
        figures = Table([Column("FIGURE"), Column("A"), Column("B"), Column("B-A")])
        for row in document["figures"]:
            figures.add(row["figure"], *row["text"])
        print_table(figures, fmt)
        print_lines(["", f"A: {sides[0]}; B: {sides[1]}; {document['podsDiffering']} pods placed differently"])
        if document["pods"]:
            pods = Table([Column("POD"), Column("A-STATUS"), Column("A-NODE"), Column("B-STATUS"), Column("B-NODE"),
                          Column("A-WAITED", wide=True), Column("B-WAITED", wide=True)])
            for row in document["pods"]:
                a, b = row["a"] or {}, row["b"] or {}
                pods.add(row["pod"], a.get("phase", ""), a.get("node", ""), b.get("phase", ""), b.get("node", ""),
                         duration(a.get("waited")), duration(b.get("waited")))
            print_lines([""])
            print_table(pods, fmt)
    elif fmt is OutputFormat.name:
        print_names(resource_name("Pod", row["pod"].split("/", 1)[1]) for row in document["pods"])
    else:
        print_data(document, fmt)
    raise typer.Exit(EXIT_OK)


def register(app: typer.Typer) -> None:
    @app.command("simulate", help=HELP)
    def simulate_command(
        files: ScenarioFiles = None,
        recursive: RecursiveOption = False,
        policy: PolicyOption = Policy.KUBE_SCHEDULER,
        seed: SeedOption = 0,
        kubernetes_version: VersionOption = "1.37",
        feature_gates: GatesOption = "",
        output: OutputOption = None,
        no_headers: NoHeadersOption = False,
        quiet: QuietOption = False,
        fail_on_pending: Annotated[
            bool, typer.Option("--fail-on-pending", help="Exit 1 if any pod is still pending at the end.")
        ] = False,
        exact: Annotated[
            bool, typer.Option("--exact", help="Run the allocator on every node (no index); slower, same decisions.")
        ] = False,
        kubeconfig: KubeconfigOption = None,
        context: ContextOption = None,
        serve: Annotated[
            bool, typer.Option("--serve", help="After the report, serve /metrics for the simulated cluster until "
                               "interrupted (with --speed: live while simulated time advances).")
        ] = False,
        listen: Annotated[
            str, typer.Option("--listen", metavar="HOST:PORT", help="Where --serve listens.")
        ] = "127.0.0.1:9400",
        html: Annotated[
            Path | None, typer.Option("--html", metavar="FILE", help="Also write an interactive report (Plotly, "
                                      "works offline): GPUs in use by model and pool, pending pods by reason, "
                                      "pending times, each busy node's devices over time.")
        ] = None,
        speed: Annotated[
            float | None, typer.Option("--speed", min=0.001, help="With --serve: simulated seconds per wall-clock "
                                       "second (e.g. 60: an hour in a minute).")
        ] = None,
        max_file_size: MaxFileSizeOption = "8Mi",
        compare_with: Annotated[
            tuple[str, str] | None, typer.Option("--compare", metavar="A B", help="Run two scenarios and print their "
                                                 "differences: each a manifest path, or policy:NAME for the -f "
                                                 "scenario under that policy.")
        ] = None,
    ) -> None:
        from functools import partial

        from kubedra.sim.report import build_report
        from kubedra.sim.simulate import Options, simulate

        if compare_with is not None:
            apart = [flag for flag, given in (("--html", html is not None), ("--serve", serve),
                                              ("--kubeconfig", kubeconfig is not None)) if given]
            if apart:  # each would apply to one run; which one is not for kubedra to guess
                fail(f"--compare runs two scenarios and prints their differences; {', '.join(apart)} applies to one "
                     "run: run each side on its own with it")
            _compare(compare_with, files, seed, kubernetes_version, feature_gates, policy, exact,
                     output or default_format())

        # What is loaded and what the run makes live until the end: the collector treats both as kept (loading
        # outside it walked the parsed objects in a dozen full passes, a third of the load's CPU at 10,000 nodes).
        with batch_collection():
            loaded, scenario, features = load_scenario(files, seed, kubernetes_version, feature_gates, kubeconfig,
                                                       context, limits=parse_limits(max_file_size),
                                                       recursive=recursive)
            # Before the default table, many warnings become one line; json and yaml readers get each on stderr.
            summarize = (output or default_format()) in (OutputFormat.table, OutputFormat.wide)
            print_warnings(loaded.warnings, quiet=quiet, summarize=summarize)
            print_warnings([*loaded.notes, *scenario.notes], quiet=quiet, label="Note")
            options = Options(policy=policy, seed=seed, features=features, fast_path=not exact)
            pods = len(scenario.workloads.arrivals) + sum(len(j.pods) for j in scenario.workloads.all_jobs())
            show = stderr_console().is_terminal and pods >= PROGRESS_FROM
            if serve:
                from kubedra.cli.serve import serve_simulation

                result = serve_simulation(scenario, options, listen, speed)
            else:
                result = _progress_run(partial(simulate, scenario, options), show=show)
        # The report and its printing keep what they make until the output is written, as the run does: outside
        # the batch collection, full passes walked their lines, rows and documents (~0.7 s of 100,000 pods' report).
        with batch_collection():
            report = build_report(result, [str(w) for w in loaded.warnings] + scenario.notes)
            if html is not None:
                from kubedra.cli.serve import write_html

                write_html(html, result, report, summary_lines(report.summary))
            print_report(report, output or default_format(), headers=not no_headers)
        pending = report.summary["pods"]["pending"]
        if serve:
            from kubedra.cli.serve import wait_forever

            wait_forever()
        raise typer.Exit(EXIT_UNSCHEDULABLE if fail_on_pending and pending else EXIT_OK)
