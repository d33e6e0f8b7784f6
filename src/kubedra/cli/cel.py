"""``kubedra cel``: which devices a CEL selector matches, and why the others do not."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from kubedra.cli.output import EXIT_INVALID_INPUT, OutputFormat, default_format, print_data, stderr_console

HELP = """Evaluate a CEL device selector against the devices of ResourceSlices.

Each device is listed with whether it matches; a device that does not match shows false, or the
evaluation error (e.g. "no such key: memory"). Unqualified names land in the slice driver's domain.

-o json prints a list of {"device": "<driver>/<pool>/<device>", "match": true|false, "error": "..."};
"error" is always present and is "" when evaluation succeeded. A compile error exits 2 with its message.
"""


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


def _table(rows: list[dict[str, Any]]) -> None:
    from rich.table import Table

    from kubedra.cli.output import stdout_console

    table = Table("DEVICE", "MATCH", "REASON")
    for row in rows:
        reason = row["error"] or ("" if row["match"] else "selector is false")
        table.add_row(row["device"], "yes" if row["match"] else "no", reason)
    stdout_console().print(table)


def register(app: typer.Typer) -> None:
    @app.command("cel", help=HELP)
    def cel_command(
        expression: str = typer.Argument(..., help="The CEL selector expression."),
        files: list[Path] = typer.Option(  # noqa: B008 - typer's declaration style
            ..., "-f", "--filename", help="Files or directories with ResourceSlices ('-' for stdin)."
        ),
        output: OutputFormat | None = typer.Option(  # noqa: B008
            None, "-o", "--output", help="table (terminal default) or json."
        ),
    ) -> None:
        from kubedra.cel import CelCompileError
        from kubedra.cli.output import fail_invalid, print_warnings
        from kubedra.objects.errors import InvalidInputError
        from kubedra.objects.load import load_paths
        from kubedra.objects.model import ResourceSlice

        try:
            loaded = load_paths([str(f) for f in files])
        except InvalidInputError as exc:
            fail_invalid(exc)
        warnings = getattr(loaded, "warnings", None)
        if warnings:
            print_warnings(warnings)
        try:
            rows = evaluate(expression, list(loaded.of_kind(ResourceSlice)))
        except CelCompileError as exc:
            stderr_console().print(f"error: {exc}", highlight=False, markup=False)
            raise SystemExit(EXIT_INVALID_INPUT) from None
        fmt = output or default_format()
        if fmt is OutputFormat.table:
            _table(rows)
        else:
            print_data(rows, fmt)
