"""The typer application: each subcommand module adds itself through ``register``."""

from __future__ import annotations

import typer

from kubedra import __version__
from kubedra.cli.helptext import EXAMPLES_HEADING


def _version(value: bool) -> None:
    if value:
        typer.echo(f"kubedra {__version__}")
        raise typer.Exit(0)


def build_app() -> typer.Typer:
    """A fresh application (fresh per call, so tests never share state)."""
    app = typer.Typer(
        name="kubedra",
        help=(
            "Kubernetes Dynamic Resource Allocation (DRA) for GPUs.\n\n"
            "Read DRA manifests (v1, the betas and the legacy dialect), decide device allocations "
            "exactly as kube-scheduler does, and simulate whole GPU clusters over time.\n\n"
            "Output is a table, on a terminal or piped (plain aligned columns, kubectl style); "
            "-o json|yaml for machines, -o wide for more columns, -o name for kind/name.\n\n"
            f"{EXAMPLES_HEADING}\n\n"
            "  kubedra simulate\n"
            "  kubedra simulate -h\n\n"
            "Exit status: 0 done, 1 unschedulable (allocate; simulate --fail-on-pending), 2 bad input or usage."
        ),
        no_args_is_help=False,
        add_completion=False,
        pretty_exceptions_enable=False,
        rich_markup_mode="rich",
        context_settings={"help_option_names": ["-h", "--help"]},
    )

    @app.callback(invoke_without_command=True)
    def _root(
        ctx: typer.Context,
        version: bool = typer.Option(False, "--version", callback=_version, is_eager=True, help="Print the version."),  # noqa: ARG001
    ) -> None:
        if ctx.invoked_subcommand is None:
            typer.echo(ctx.get_help())

    from kubedra.cli import commands

    for register in commands.REGISTRARS:
        register(app)
    return app
