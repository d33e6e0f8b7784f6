"""``kubedra migrate plan``: the waves that switch a cluster's nodes from NVIDIA's device plugin to DRA."""

from __future__ import annotations

import enum
from pathlib import Path
from typing import Annotated, Any

import typer

from kubedra.cli.helptext import command_help
from kubedra.cli.options import ContextOption, KubeconfigOption, MaxFileSizeOption, QuietOption, parse_limits
from kubedra.cli.output import EXIT_OK, Column, OutputFormat, Table, fail, fail_invalid, print_data, stdout_console

HELP = command_help(
    "Plan the switch of a running cluster from the device plugin to DRA, node by node, each wave simulated.",
    "Reads the cluster as manifests (files, directories, - for stdin): NodePools with spec.devicePlugin: true are "
    "the nodes to switch, the device plugin's time-slicing ConfigMap multiplies what they advertise, and the "
    "workloads running on them (Deployments, StatefulSets, ReplicaSets, Jobs, Pods), their PriorityClasses and "
    "PodDisruptionBudgets. Each wave switches --max-unavailable nodes: their pods are evicted (controller-owned "
    "pods are recreated, bare pods are lost), the switched nodes publish ResourceSlices and serve nvidia.com/gpu "
    "through the DeviceClass's extendedResourceName (KEP-5004), and the simulator schedules the evicted pods on "
    "the mixed cluster exactly as kube-scheduler would; the pods that stay keep their nodes.",
    "--order naive switches nodes in name order; --order smart (the default) picks each wave's nodes so that it "
    "breaks the fewest PodDisruptionBudgets, evicts the fewest pods and leaves the fewest waiting, each candidate "
    "proven by simulation, and keeps name order where that is no worse. A budget counts as broken when the pods "
    "it covers, while the wave's nodes drain (their evicted pods recreated elsewhere), or after the wave, are "
    "fewer than it asks: kubectl drain would block.",
    "Output: a table per wave (nodes, evicted, preempted and by whom, landed again and where, waiting and why, "
    "budgets) and the two "
    "orders compared; -o yaml|json: a runbook (kind RolloutPlan) with the commands of each wave: cordon, drain, "
    "the GPU Operator's device-plugin label off, the DRA driver's label on, wait for the node's ResourceSlices, "
    "uncordon. The recreated pods preempt lower-priority running pods where kube-scheduler would (the victims are "
    "reported: a controller's recreated, a bare pod lost). Not modelled yet: the time the driver's DaemonSet takes.",
    "--kubeconfig (and --context) reads the live cluster instead, read only: its Nodes, running pods (they keep "
    "their nodes: the plan starts from there), their controllers, PriorityClasses, PodDisruptionBudgets, "
    "ResourceSlices, DeviceClasses, and the GPU Operator's ClusterPolicy with the device plugin's ConfigMap it "
    "names; FILES add manifests (workloads not yet deployed). Nodes advertising nvidia.com/gpu are the nodes to "
    "switch, their GPUs read from GPU Feature Discovery's labels (nvidia.com/gpu.product, nvidia.com/gpu.count, "
    "nvidia.com/gpu.memory, nvidia.com/gpu.replicas); a node without nvidia.com/gpu.product is refused.",
    examples=[
        "kubedra migrate plan examples/migrate/rollout",
        "kubedra migrate plan examples/migrate/rollout --max-unavailable 2 --order naive",
        "kubedra migrate plan examples/migrate/rollout -o yaml > runbook.yaml",
        "kubedra migrate plan examples/migrate/rollout --html rollout.html   # the report page",
        "kubedra migrate plan --kubeconfig ~/.kube/config -f examples/migrate/rollout   # live, plus manifests",
    ],
    exit_status="0 planned (waiting pods are reported, not an error), 2 invalid input (file, object and field; a "
    "node without GFD's labels) or a cluster that cannot be read.",
)


MAX_WAVES = 100
"""The most waves a plan simulates (each wave simulates the whole cluster): beyond, exit 2 asking for a larger
--max-unavailable rather than running for minutes."""


class Order(enum.StrEnum):
    smart = "smart"
    naive = "naive"


def _live(kubeconfig: str | None, context: str | None, paths: list[str], limits: Any) -> Any:
    """The cluster read live (read only), ``paths`` added; exit 2 saying why where it cannot be read."""
    import os

    from kubedra.cli.live import request_timeout
    from kubedra.kube.api import KubeError, connect
    from kubedra.kube.rollout import read_live

    try:
        with connect(kubeconfig, context, timeout=request_timeout(os.environ)) as client:
            return read_live(client, paths, limits).cluster
    except KubeError as exc:
        fail(str(exc))


def _plan(paths: list[str], max_unavailable: int, order: Order, limits: Any,
          live: tuple[str | None, str | None] | None = None) -> tuple[Any, Any, list[str]]:
    from kubedra.allocator import Features
    from kubedra.migrate import cronjob_probe, waves
    from kubedra.migrate.rollout import read_cluster
    from kubedra.objects.errors import InvalidInputError
    from kubedra.objects.load import load_paths
    from kubedra.sim.scenario import build_scenario

    try:
        if live is not None:
            cluster = _live(*live, paths, limits)
        else:
            loaded = load_paths(paths, limits=limits, recursive=True)
            scenario = build_scenario(loaded)
            cluster = read_cluster(loaded, scenario)
    except InvalidInputError as error:
        fail_invalid(error)
    nodes = len(cluster.gpu_nodes)
    if -(-nodes // max_unavailable) > MAX_WAVES:
        fail(f"--max-unavailable {max_unavailable}: {nodes} nodes to switch make {-(-nodes // max_unavailable)} "
             f"waves, more than the {MAX_WAVES} a plan simulates; give --max-unavailable "
             f"{-(-nodes // MAX_WAVES)} or more")
    features = Features.for_release("1.37")
    baseline = waves.naive(cluster, features, max_unavailable)
    other = waves.smart(cluster, features, max_unavailable, baseline)
    chosen, other = (baseline, other) if order is Order.naive else (other, baseline)
    chosen.cronjobs = cronjob_probe.for_plan(cluster, features, chosen)
    return chosen, other, cluster.notes


def _print_tables(plan: Any, other: Any, notes: list[str]) -> None:
    from kubedra.migrate.waves import detail_lines, totals_row, wave_rows

    console = stdout_console()

    def say(line: str) -> None:
        console.print(line, highlight=False, markup=False, soft_wrap=True)

    if plan.cronjobs:
        say("BEFORE THE FIRST WAVE")
        for name, cron in plan.cronjobs[0].items():
            say(f"  {cron.line(name)}")
        say("")
    for i, wave in enumerate(plan.waves, start=1):
        say(f"WAVE {i}: {', '.join(wave.switching)}")
        table = Table([Column("POD"), Column("EVICTED"), Column("NOW")])
        for row in wave_rows(wave):
            table.add(*row)
        for line in table.lines() if table.rows else ["  no pod evicted or waiting"]:
            say(line)
        for line in detail_lines(wave, plan.cronjobs[i] if plan.cronjobs else {}):
            say(f"  {line}")
        say("")
    table = Table([Column("ORDER"), Column("WAVES"), Column("EVICTIONS"), Column("PREEMPTED"), Column("LOST"),
                   Column("WAITING"), Column("BUDGETS BROKEN")])
    for p in (plan, other):
        table.add(*totals_row(p, plan))
    for line in table.lines():
        say(line)
    if plan.restarted or other.restarted:
        say(f"groups, JobSets and RayJobs restarted or failed: {plan.order} {plan.restarted}, {other.order} "
            f"{other.restarted}")
    for note in [*notes, *plan.notes]:
        say(f"note: {note}")


def plan_app() -> typer.Typer:
    app = typer.Typer(add_completion=False, pretty_exceptions_enable=False, rich_markup_mode="rich",
                      context_settings={"help_option_names": ["-h", "--help"]})

    @app.command("plan", help=HELP)
    def plan_command(
        paths: Annotated[list[str] | None, typer.Argument(help="Files, directories or - (as -f).",
                                                          show_default=False)] = None,
        files: Annotated[list[str] | None, typer.Option(
            "-f", "--filename", help="File, directory (*.yaml, *.yml, *.json) or - for stdin; repeatable.")] = None,
        max_unavailable: Annotated[int, typer.Option("--max-unavailable", min=1,
                                                     help="Nodes switched per wave.")] = 1,
        order: Annotated[Order, typer.Option("--order", help="smart: fewest evictions, no broken budget where "
                                             "an order avoids it; naive: node name order.")] = Order.smart,
        output: Annotated[OutputFormat, typer.Option("-o", "--output", help="table, yaml or json (a runbook).")]
        = OutputFormat.table,
        quiet: QuietOption = False,  # noqa: ARG001  (the notes are part of the plan's output)
        max_file_size: MaxFileSizeOption = "8Mi",
        kubeconfig: KubeconfigOption = None,
        context: ContextOption = None,
        html: Annotated[Path | None, typer.Option("--html", metavar="FILE", help="Also write a report (Plotly, "
                                                  "one self-contained HTML file): the pods each wave disrupts and "
                                                  "the nodes switched, both orders side by side, each wave's "
                                                  "moves.")] = None,
    ) -> None:
        from kubedra.migrate import waves

        inputs = [*(paths or []), *(files or [])]
        live = (kubeconfig, context) if kubeconfig is not None or context is not None else None
        if not inputs and live is None:
            fail("no input: give FILES, a directory or - (or -f), or --kubeconfig")
        if output not in (OutputFormat.table, OutputFormat.wide, OutputFormat.yaml, OutputFormat.json):
            fail(f"-o {output.value}: migrate plan prints table, yaml or json")
        plan, other, notes = _plan(inputs, max_unavailable, order, parse_limits(max_file_size), live)
        plan.notes[:0] = notes
        if output in (OutputFormat.yaml, OutputFormat.json):
            print_data(waves.document(plan, other), output)
        else:
            _print_tables(plan, other, [])
        if html is not None:
            from kubedra.cli.serve import write_page
            from kubedra.report.rollout import rollout_report

            write_page(html, rollout_report(plan, other, plan.notes))
        raise typer.Exit(EXIT_OK)

    @app.callback()
    def _group() -> None:
        """kubedra migrate."""

    return app
