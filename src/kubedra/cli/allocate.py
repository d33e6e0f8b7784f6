"""``kubedra allocate``: the device decisions kube-scheduler would make for some claims on one node."""

from __future__ import annotations

import difflib
import time
from typing import Annotated, Any

import typer

from kubedra.cli.helptext import command_help
from kubedra.cli.options import GatesOption, InputFiles, OutputOption, QuietOption, SeedOption, VersionOption
from kubedra.cli.output import (
    EXIT_INVALID_INPUT,
    TABLE_FORMATS,
    OutputFormat,
    default_format,
    print_data,
    print_warnings,
    require_format,
)

HELP = command_help(
    "Decide which devices the unallocated claims get on a node, exactly as kube-scheduler would.",
    "Inputs are read as [bold]kubedra simulate[/bold] reads them: NodePools expand into Nodes and NVIDIA's "
    "ResourceSlices, NVIDIA's DeviceClasses are built in; claims without status.allocation are allocated together (as "
    "one pod using them all), those with one are the devices already in use. The node must be a Node of the input or "
    "named by a ResourceSlice's nodeName. The decision is the structured allocator's: allocated (with the v1 "
    "AllocationResults), unschedulable (with the reasons) or an error.",
    "-o json prints {node, result, allocations, message, reasons}: reasons is the diagnosis of an unschedulable "
    "decision, line by line as the table prints it. --seed makes shareIDs repeat.",
    examples=[
        "kubedra allocate -f examples/allocate/a100-pcie-aligned.yaml --node a100-0",
        "kubedra allocate -f examples/allocate/l4-shares.yaml --node l4-0 -o yaml",
        "kubedra allocate -f examples/allocate/h100-mig.yaml --node h100-0   # exit 1: unschedulable",
    ],
    exit_status="0 allocated, 1 unschedulable, 2 an allocation error or bad input.",
)

FILTER_TIMEOUT_S = 10.0
"""kube-scheduler's default ``DynamicResourcesArgs.filterTimeout``."""



def _fail(message: str) -> None:
    from kubedra.cli.output import stderr_console

    stderr_console().print(f"error: {message}", highlight=False, markup=False)
    raise typer.Exit(EXIT_INVALID_INPUT)


def _check_node(scenario: Any, node_name: str) -> None:
    """Exits 2 unless ``node_name`` is a Node of the input or the nodeName of one of its ResourceSlices."""
    names = [n.metadata.name for n in scenario.nodes]
    names += [s.spec.node_name for s in scenario.slices if s.spec.node_name]
    known = list(dict.fromkeys(names))
    if node_name in known:
        return
    close = difflib.get_close_matches(node_name, known, n=5, cutoff=0.6)
    if close:
        hint = f"; did you mean: {', '.join(close)}?"
    elif known:
        hint = f"; nodes in the input: {', '.join(known[:10])}{' …' if len(known) > 10 else ''}"
    else:
        hint = "; the input has no Nodes, NodePools or node-local ResourceSlices"
    _fail(f"node {node_name!r} not found: no Node, NodePool node or ResourceSlice nodeName of that name{hint}")


def run_allocate(
    files: list[str], node_name: str, gates: str, version: str, fmt: OutputFormat, seed: int = 0, quiet: bool = False
) -> int:
    """Load, allocate, print; returns the exit status (0 allocated, 1 unschedulable, 2 error)."""
    from kubedra.allocator.snapshot import Snapshot, decision_document
    from kubedra.cli.simulate import load_scenario
    from kubedra.scheduler.dra import seeded_share_ids

    # Shape checks only: the allocator takes what upstream's takes (API validation is `kubedra validate`).
    loaded, scenario, features = load_scenario(files, seed, version, gates, api_validation=False)
    print_warnings(loaded.warnings, quiet=quiet)
    _check_node(scenario, node_name)
    objects = [*scenario.nodes, *scenario.slices, *scenario.classes, *scenario.taint_rules, *scenario.claims]
    deadline = time.monotonic() + FILTER_TIMEOUT_S
    decision, _ = Snapshot.from_objects(objects, node_name).decide(
        features,
        explain=True,
        interrupt=lambda: time.monotonic() > deadline,
        share_ids=seeded_share_ids(seed),
    )
    code = {"allocated": 0, "unschedulable": 1, "error": 2}[decision.result]
    if fmt in TABLE_FORMATS:
        _print_table(decision.result, decision.allocations, decision.message, decision.reasons, node_name)
        return code
    print_data(decision_document(node_name, decision), fmt)
    return code


def _print_table(result: str, allocations: dict[str, Any], message: str, reasons: list[str], node: str) -> None:
    from kubedra.cli.output import stderr_console, stdout_console

    out = stdout_console()
    if result == "error":
        stderr_console().print(f"error: {message}", highlight=False, markup=False)
        return
    if result == "unschedulable":
        out.print(f"unschedulable on node {node}: {message}", highlight=False, markup=False)
        for reason in reasons:
            out.print(f"  {reason}", highlight=False, markup=False)
        return
    out.print(f"allocated on node {node}", highlight=False, markup=False)
    for key, allocation in allocations.items():
        for r in allocation.devices.results:
            share = f" share {r.share_id}" if r.share_id else ""
            out.print(f"  {key} -> {r.request} -> {r.driver}/{r.pool}/{r.device}{share}", highlight=False, markup=False)


def register(app: typer.Typer) -> None:
    """Add ``allocate`` to the application."""

    @app.command("allocate", help=HELP)
    def allocate(
        files: InputFiles,
        node: Annotated[str, typer.Option("--node", help="Name of the node to allocate on.")],
        feature_gates: GatesOption = "",
        kubernetes_version: VersionOption = "1.37",
        output: OutputOption = None,
        quiet: QuietOption = False,
        seed: SeedOption = 0,
    ) -> None:
        fmt = output or default_format()
        require_format(fmt, (OutputFormat.table, OutputFormat.wide, OutputFormat.json, OutputFormat.yaml), "allocate")
        code = run_allocate(files, node, feature_gates, kubernetes_version, fmt, seed=seed, quiet=quiet)
        raise typer.Exit(code)
