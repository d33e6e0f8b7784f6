"""``kubedra validate``: load manifests and check them against the API's rules and limits."""

from __future__ import annotations

from typing import Annotated

import typer

from kubedra.cli.options import InputFiles
from kubedra.cli.output import EXIT_OK, fail_invalid, print_warnings, stdout_console

HELP = """Check that FILEs load and satisfy resource.k8s.io/v1's validation rules and limits.

Every problem is reported, one per line, naming the file, the document index, Kind/name and the field
path, in the API server's wording (e.g. "spec.devices: Too many: 129: must have at most 128 items").
Beta and legacy documents are converted first; their conversion warnings go to stderr.

Exit status: 0 valid, 2 invalid.

Examples:

  kubedra validate -f slices.yaml

  kubedra validate -f manifests/ -f extra-claim.yaml

  kubectl get resourceslices -o yaml | kubedra validate -f -
"""


def register(app: typer.Typer) -> None:
    @app.command("validate", help=HELP, no_args_is_help=True)
    def validate(
        files: InputFiles,
        quiet: Annotated[bool, typer.Option("-q", "--quiet", help="Do not print conversion warnings.")] = False,
    ) -> None:
        from kubedra.objects.errors import InvalidInputError
        from kubedra.objects.load import load_paths

        try:
            loaded = load_paths(files)
        except InvalidInputError as error:
            fail_invalid(error)
        if not quiet:
            print_warnings(loaded.warnings)
        count = len(loaded.objects)
        text = f"{count} object{'s' if count != 1 else ''} valid"
        if loaded.raw:
            text += f" ({len(loaded.raw)} other document{'s' if len(loaded.raw) != 1 else ''} passed through unchecked)"
        stdout_console().print(text, highlight=False, markup=False)
        raise typer.Exit(EXIT_OK)
