"""docs/reference/commands.md, written from the CLI's own ``--help``: the same summary, paragraphs, examples, exit
statuses and options, as Markdown. ``scripts/docs-reference`` writes the page; tests/docs/test_reference.py fails
when the checked-in page is not what this writes, so the reference cannot drift from the commands.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import typer
from rich.text import Text
from typer._click import core

from kubedra.cli.app import build_app
from kubedra.cli.helptext import EXAMPLES_HEADING

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "reference" / "commands.md"
HEADER = """# Command reference

Generated from each command's `--help` by `scripts/docs-reference`; do not edit (a test fails when it is stale).
Every example runs as written from the root of a clone (`tests/cli/test_help_examples.py` runs each of them).
"""


def _plain(markup: str) -> str:
    return Text.from_markup(markup).plain


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _commands(command: Any, context: Any) -> list[tuple[Any, Any]]:
    """The command and, depth first in name order, its subcommands, each with its click context."""
    found = [(command, context)]
    for name, sub in sorted(getattr(command, "commands", {}).items()):
        if not sub.hidden:
            found.extend(_commands(sub, core.Context(sub, info_name=name, parent=context)))
    if context.command_path == "kubedra migrate":  # ``migrate plan``: handed over by ``migrate``, not a subcommand
        from kubedra.cli.helptext import name_placeholders
        from kubedra.cli.migrate_plan import plan_app

        plan = typer.main.get_command(plan_app()).commands["plan"]  # type: ignore[attr-defined]
        name_placeholders(plan)
        found.append((plan, core.Context(plan, info_name="kubedra migrate plan")))
    return found


def _section(command: Any, context: Any) -> str:
    path = context.command_path
    paragraphs = _plain(command.help or "").split("\n\n")
    prose, examples, exit_status = [], [], ""
    rest = iter(paragraphs)
    for paragraph in rest:
        if paragraph == EXAMPLES_HEADING:
            examples = [line.strip() for line in next(rest, "").splitlines() if line.strip()]
        elif paragraph.startswith("Exit status:"):
            exit_status = paragraph
        else:
            prose.append(paragraph)
    lines = [f"## {path}", "", "```text", command.get_usage(context).removeprefix("Usage: "), "```", ""]
    lines += [p for para in prose for p in (para, "")]
    if examples:
        lines += ["Examples:", "", "```sh", *examples, "```", ""]
    if exit_status:
        lines += [exit_status, ""]
    options = [p.get_help_record(context) for p in command.params if not getattr(p, "hidden", False)]
    options = [o for o in options if o is not None]
    if options:
        lines += ["| option | meaning |", "|---|---|"]
        lines += [f"| `{_cell(opts)}` | {_cell(_plain(text))} |" for opts, text in options]
        lines.append("| `-h, --help` | Show this message and exit. |")
        lines.append("")
    subcommands = [(n, s) for n, s in sorted(getattr(command, "commands", {}).items()) if not s.hidden]
    if subcommands:
        lines += ["| command | what it does |", "|---|---|"]
        lines += [f"| [`{path} {n}`](#{(path + ' ' + n).replace(' ', '-')}) | {_cell(_plain(s.get_short_help_str(200)))} |"
                  for n, s in subcommands]
        lines.append("")
    return "\n".join(lines)


def render() -> str:
    root = typer.main.get_command(build_app())
    sections = [_section(c, ctx) for c, ctx in _commands(root, core.Context(root, info_name="kubedra"))]
    return HEADER + "\n" + "\n".join(sections).rstrip("\n") + "\n"


def main() -> int:
    PAGE.write_text(render())
    print(f"wrote {PAGE.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
