"""``kubedra cel``: which devices a CEL selector matches, and why the others do not."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from kubedra.cli.helptext import command_help
from kubedra.cli.options import NoHeadersOption, OutputOption, QuietOption
from kubedra.cli.output import (
    EXIT_INVALID_INPUT,
    TABLE_FORMATS,
    Column,
    OutputFormat,
    Table,
    default_format,
    print_data,
    print_names,
    print_table,
    stderr_console,
)

HELP = command_help(
    "Evaluate a CEL device selector against the devices of ResourceSlices (and those kubedra's NodePools expand "
    "to, as simulate builds them).",
    "Each device is listed with whether it matches; a device that does not match shows why: the selector is false, "
    "or the evaluation error (e.g. \"no such key: memory\"). Unqualified attribute names land in the slice "
    "driver's domain. The table has DEVICE (driver/pool/device) MATCH REASON; -o name prints the devices that match, "
    "one per line.",
    "-o json prints a list of {\"device\": \"<driver>/<pool>/<device>\", \"match\": true|false, \"error\": "
    "\"...\"}; \"error\" is always present and is \"\" when evaluation succeeded.",
    examples=[
        "kubedra cel 'device.attributes[\"gpu.nvidia.com\"].type == \"mig\"' -f examples/allocate/h100-mig.yaml",
        "kubedra cel 'device.capacity[\"gpu.nvidia.com\"].memory.compareTo(quantity(\"40Gi\")) >= 0'"
        " -f examples/allocate",
        "kubedra cel 'device.driver ==' -f examples/allocate/l4-shares.yaml   # exit 2: a syntax error",
    ],
    exit_status="0 evaluated (whether or not any device matches), 2 a compile error or bad input.",
)


def evaluate(expression: str, slices: list[Any]) -> list[dict[str, Any]]:
    """One row per device, in file order; raises ``CelCompileError``."""
    from kubedra.cel import CelRuntimeError, CompileCache, DeviceView

    program = CompileCache().compile(expression)
    rows: list[dict[str, Any]] = []
    for rs in slices:
        spec = rs.spec
        for device in spec.devices:
            row: dict[str, Any] = {
                "device": f"{spec.driver}/{spec.pool.name}/{device.name}",
                "match": False,
                "error": "",
            }
            try:
                row["match"] = program.evaluate(DeviceView(spec.driver, device))
            except CelRuntimeError as exc:
                row["error"] = str(exc)
            rows.append(row)
    return rows


def _table(rows: list[dict[str, Any]]) -> Table:
    table = Table([Column("DEVICE"), Column("MATCH"), Column("REASON")])
    for row in rows:
        reason = row["error"] or ("" if row["match"] else "selector is false")
        table.add(row["device"], "yes" if row["match"] else "no", reason)
    return table


def register(app: typer.Typer) -> None:
    @app.command("cel", help=HELP)
    def cel_command(
        expression: str = typer.Argument(..., help="The CEL selector expression."),
        files: list[Path] = typer.Option(  # noqa: B008 - typer's declaration style
            ..., "-f", "--filename", help="Files or directories with ResourceSlices or NodePools ('-' for stdin)."
        ),
        output: OutputOption = None,
        no_headers: NoHeadersOption = False,
        quiet: QuietOption = False,
    ) -> None:
        from kubedra.cel import CelCompileError
        from kubedra.cli.output import fail_invalid, print_warnings
        from kubedra.cluster.nodepool import expand_nodepools, is_nodepool
        from kubedra.objects.errors import InvalidInputError
        from kubedra.objects.load import load_paths
        from kubedra.objects.model import ResourceSlice

        try:
            loaded = load_paths([str(f) for f in files])
            _, pool_slices = expand_nodepools([r for r in loaded.raw if is_nodepool(r.data)])
        except InvalidInputError as exc:
            fail_invalid(exc)
        print_warnings(loaded.warnings, quiet=quiet)
        try:
            rows = evaluate(expression, [*loaded.of_kind(ResourceSlice), *pool_slices])
        except CelCompileError as exc:
            stderr_console().print(f"error: {exc}", highlight=False, markup=False)
            raise SystemExit(EXIT_INVALID_INPUT) from None
        fmt = output or default_format()
        if fmt is OutputFormat.name:
            print_names(row["device"] for row in rows if row["match"])
        elif fmt in TABLE_FORMATS:
            print_table(_table(rows), fmt, headers=not no_headers)
        else:
            print_data(rows, fmt)
