"""``kubedra allocate``: the device decisions kube-scheduler would make for some claims on one node."""

from __future__ import annotations

import time
from typing import Annotated, Any

import typer

from kubedra.cli.helptext import command_help
from kubedra.cli.options import GatesOption, InputFiles, OutputOption, QuietOption, VersionOption
from kubedra.cli.output import (
    EXIT_INVALID_INPUT,
    TABLE_FORMATS,
    OutputFormat,
    default_format,
    fail_invalid,
    print_data,
    print_warnings,
    require_format,
)

HELP = command_help(
    "Decide which devices the unallocated claims get on a node, exactly as kube-scheduler would.",
    "FILEs hold the node, its ResourceSlices, DeviceClasses and the claims (allocated ones are the devices in use). "
    "The decision is the structured allocator's: allocated (with the v1 AllocationResults), unschedulable (with the "
    "reasons) or an error.",
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


def run_allocate(
    files: list[str], node_name: str, gates: str, version: str, fmt: OutputFormat, quiet: bool = False
) -> int:
    """Load, allocate, print; returns the exit status (0 allocated, 1 unschedulable, 2 error)."""
    from kubedra.allocator import FeatureGateError, Features, parse_gates
    from kubedra.allocator.snapshot import Snapshot, decision_document
    from kubedra.objects.errors import InvalidInputError
    from kubedra.objects.load import load_paths

    try:
        features = Features.for_release(version).with_gates(parse_gates(gates))
    except FeatureGateError as exc:
        _fail(str(exc))
    try:
        # Shape checks only: the allocator takes what upstream's takes (API validation is `kubedra validate`).
        loaded = load_paths(files, api_validation=False)
    except InvalidInputError as exc:
        fail_invalid(exc)
    print_warnings(loaded.warnings, quiet=quiet)
    deadline = time.monotonic() + FILTER_TIMEOUT_S
    decision, _ = Snapshot.from_objects(loaded.objects, node_name).decide(
        features, explain=fmt in TABLE_FORMATS, interrupt=lambda: time.monotonic() > deadline
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
    ) -> None:
        fmt = output or default_format()
        require_format(fmt, (OutputFormat.table, OutputFormat.wide, OutputFormat.json, OutputFormat.yaml), "allocate")
        code = run_allocate(files, node, feature_gates, kubernetes_version, fmt, quiet)
        raise typer.Exit(code)
