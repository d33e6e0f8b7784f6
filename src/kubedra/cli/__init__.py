"""The command line: one thin module per subcommand; the library never prints."""

from __future__ import annotations

import functools
import sys

import typer.main
from typer.core import TyperGroup

from kubedra.cli.app import build_app
from kubedra.cli.helptext import name_placeholders


@functools.cache
def _command() -> TyperGroup:
    """The click command behind the typer app, built once per process: commands keep no state between calls, and
    building it costs more than most runs (in-process callers such as the tests call ``main`` thousands of times)."""
    command = typer.main.get_command(build_app())
    assert isinstance(command, TyperGroup)
    name_placeholders(command)
    return command


def main(argv: list[str] | None = None) -> int:
    """Run kubedra with ``argv`` (without the program name) and return the exit status."""
    try:
        result = _command().main(
            args=argv if argv is not None else sys.argv[1:], prog_name="kubedra", standalone_mode=False
        )
    except SystemExit as exc:  # typer.Exit and explicit exits
        code = exc.code
        return code if isinstance(code, int) else (0 if code is None else 2)
    except Exception as exc:
        exit_code = getattr(exc, "exit_code", None)
        if isinstance(exit_code, int):
            show = getattr(exc, "show", None)
            if callable(show):
                show()
            return exit_code
        raise
    # Without standalone mode click returns the code of typer.Exit instead of raising it.
    return result if isinstance(result, int) else 0


def entrypoint() -> None:
    """The ``kubedra`` console script."""
    sys.exit(main())
