"""One shape for every subcommand's ``--help``: what it does, examples that run as written, exit statuses.

Examples are run from the root of a fresh clone and may only name files that exist there (``examples/``,
``src/kubedra/data/``); ``tests/cli/test_help_examples.py`` runs every one of them. An example whose documented exit
status is not 0 says so in a trailing comment: ``# exit 1: ...``.
"""

from __future__ import annotations

from collections.abc import Sequence

EXAMPLES_HEADING = "Examples (run from the root of a clone):"


def command_help(summary: str, *paragraphs: str, examples: Sequence[str], exit_status: str) -> str:
    """The help text: the one-line summary (shown in ``kubedra --help``), paragraphs, examples, exit statuses.

    Each paragraph is one line (the help renderer wraps it); examples keep their own lines.
    """
    block = "\n".join(f"  {example}" for example in examples)
    return "\n\n".join([summary, *paragraphs, f"{EXAMPLES_HEADING}\n\n{block}", f"Exit status: {exit_status}"])
