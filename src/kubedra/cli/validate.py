"""``kubedra validate``: load manifests and check them against the API's rules and limits."""

from __future__ import annotations

import typer

from kubedra.cli.helptext import command_help
from kubedra.cli.options import InputFiles, QuietOption
from kubedra.cli.output import EXIT_OK, fail_invalid, print_warnings, stdout_console

HELP = command_help(
    "Check that FILEs load and satisfy resource.k8s.io/v1's validation rules and limits.",
    "Every problem is reported, one per line, naming the file, the document index, Kind/name and the field path, in "
    "the API server's wording (e.g. \"spec.devices: Too many: 129: must have at most 128 items\"). Beta and legacy "
    "documents are converted first; their conversion warnings go to stderr (-q drops them).",
    examples=[
        "kubedra validate -f examples/allocate/h100-mig.yaml",
        "kubedra validate -f src/kubedra/data/seed -f src/kubedra/data/demo -q",
        "cat examples/allocate/l4-shares.yaml | kubedra validate -f -",
    ],
    exit_status="0 valid, 2 invalid.",
)


def register(app: typer.Typer) -> None:
    @app.command("validate", help=HELP, no_args_is_help=True)
    def validate(
        files: InputFiles,
        quiet: QuietOption = False,
    ) -> None:
        from kubedra.objects.errors import InvalidInputError
        from kubedra.objects.load import load_paths

        try:
            loaded = load_paths(files)
        except InvalidInputError as error:
            fail_invalid(error)
        print_warnings(loaded.warnings, quiet=quiet)
        count = len(loaded.objects)
        text = f"{count} object{'s' if count != 1 else ''} valid"
        if loaded.raw:
            text += f" ({len(loaded.raw)} other document{'s' if len(loaded.raw) != 1 else ''} passed through unchecked)"
        stdout_console().print(text, highlight=False, markup=False)
        raise typer.Exit(EXIT_OK)
