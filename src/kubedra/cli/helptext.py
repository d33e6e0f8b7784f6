"""One shape for every subcommand's ``--help``: what it does, examples that run as written, exit statuses.

Examples are run from the root of a fresh clone and may only name files that exist there (``examples/``,
``src/kubedra/data/``); ``tests/cli/test_help_examples.py`` runs every one of them. An example whose documented exit
status is not 0 says so in a trailing comment: ``# exit 1: ...``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, get_args, get_origin

EXAMPLES_HEADING = "Examples (run from the root of a clone):"


def command_help(summary: str, *paragraphs: str, examples: Sequence[str], exit_status: str) -> str:
    """The help text: the one-line summary (shown in ``kubedra --help``), paragraphs, examples, exit statuses.

    Each paragraph is one line (the help renderer wraps it); examples keep their own lines.
    """
    block = "\n".join(f"  {example}" for example in examples)
    return "\n\n".join([summary, *paragraphs, f"{EXAMPLES_HEADING}\n\n{block}", f"Exit status: {exit_status}"])


# The placeholder an option's value shows in --help, by option (what the value is), as kubectl's help names them;
# otherwise by type. Never a Python type (<list[str]>), and nothing after a flag.
_BY_OPTION = {
    "--filename": "FILE", "--kubeconfig": "FILE", "--inventory": "FILE", "--context": "NAME", "--node": "NODE",
    "--kubernetes-version": "VERSION", "--feature-gates": "GATE=BOOL,...", "--output-dir": "DIR",
    "--plugin-dir": "DIR", "--registry-dir": "DIR", "--cdi-root": "DIR", "--min-memory": "QUANTITY",
    "--gpu-memory": "QUANTITY", "--model": "GLOB", "--min-compute-capability": "VERSION",
}
_BY_TYPE: dict[Any, str] = {int: "INT", float: "NUMBER", str: "TEXT", Path: "PATH"}


def _element(annotation: Any) -> Any:
    args = [a for a in get_args(annotation) if a is not type(None)]
    if get_origin(annotation) is list or (len(args) == 1 and args[0] is not annotation):
        return _element(args[0]) if args else annotation
    return annotation


def _no_type(ctx: Any) -> str:  # noqa: ARG001 - the signature typer calls
    return ""


def name_placeholders(command: Any) -> None:
    """Give every option of ``command`` and its subcommands a placeholder (``-f FILE``, ``--seed INT``) where it has
    none, and none after a flag: typer's default is the Python annotation (``<list[str]>``, ``<bool>``)."""
    for sub in getattr(command, "commands", {}).values():
        name_placeholders(sub)
    made_help = command.get_help_option  # -h/--help is made on first use, from the context's names: a flag too

    def help_option(ctx: Any) -> Any:
        option = made_help(ctx)
        if option is not None:
            option.metavar = ""
        return option

    command.get_help_option = help_option
    for param in getattr(command, "params", []):
        if getattr(param, "param_type_name", "") == "argument":
            param.display_type_rich = _no_type  # its name (KIND[/NAME], FILES...) is the placeholder
            continue
        if param.metavar is not None or getattr(param, "param_type_name", "") != "option":
            continue
        if param.is_flag:
            param.metavar = ""
            continue
        descriptor = param.type_descriptor
        if getattr(descriptor, "is_choice", False):
            continue  # the choices themselves (table|json)
        long_name = next((o for o in param.opts if o.startswith("--")), "")
        placeholder = _BY_OPTION.get(long_name) or _BY_TYPE.get(_element(descriptor.annotation))
        if placeholder is not None:
            param.metavar = placeholder
