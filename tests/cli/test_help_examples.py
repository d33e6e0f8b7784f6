"""Every example in every subcommand's ``--help`` runs as written from the root of a fresh clone, in-process, and
exits as documented (0, or the status its ``# exit N`` comment names)."""

from __future__ import annotations

import io
import re
import shlex
import sys
from pathlib import Path

import pytest
import typer

from kubedra.cli import main
from kubedra.cli.app import build_app
from kubedra.cli.helptext import EXAMPLES_HEADING

ROOT = Path(__file__).resolve().parents[2]


def _commands(command: object, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """Every subcommand's argv path (``("simulate",)``, a group's ``("group", "sub")``), and the root's ``()``."""
    found = [path]
    for name, sub in sorted(getattr(command, "commands", {}).items()):  # a group's subcommands
        found.extend(_commands(sub, (*path, name)))
    return found


# ``migrate plan`` is handed over by ``migrate`` itself (a command of its own, not a typer group's subcommand).
COMMANDS = sorted({*_commands(typer.main.get_command(build_app())), ("migrate", "plan")})
LEAVES = [c for c in COMMANDS if c]


def _help(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, path: tuple[str, ...]) -> str:
    monkeypatch.setenv("COLUMNS", "400")  # no wrapping: one example per line
    monkeypatch.setenv("TERMINAL_WIDTH", "400")
    assert main([*path, "-h"]) == 0
    return capsys.readouterr().out


def examples(help_text: str) -> list[str]:
    """The lines between the examples heading and the exit status."""
    lines = [line.strip() for line in help_text.splitlines()]
    start = next((i for i, line in enumerate(lines) if line == EXAMPLES_HEADING), len(lines))
    end = next((i for i, line in enumerate(lines) if i > start and line.startswith("Exit status:")), len(lines))
    return [line for line in lines[start + 1 : end] if line]


def _expected_status(example: str) -> int:
    match = re.search(r"#\s*exit (\d)", example)
    return int(match.group(1)) if match else 0


def _kubedra_argv(example: str) -> tuple[list[str], str | None]:
    """The kubedra command of a shell line and its stdin: ``cat FILE |`` feeds it, ``> file`` and later ``| ...``
    stages are the shell's business (dropped: nothing is written)."""
    command = example.split("#", 1)[0] if " #" in example else example
    stages = [shlex.split(stage) for stage in re.split(r" \| ", command)]
    stdin = None
    for i, words in enumerate(stages):
        if words[0] == "kubedra":
            if i > 0:
                assert stages[i - 1][0] == "cat", example
                stdin = (ROOT / stages[i - 1][1]).read_text()
            argv = words[1:]
            if ">" in argv:
                argv = argv[: argv.index(">")]
            return argv, stdin
    raise AssertionError(f"no kubedra command in {example!r}")


@pytest.mark.parametrize("path", COMMANDS, ids=[" ".join(c) or "kubedra" for c in COMMANDS])
def test_every_command_has_examples_and_exit_statuses(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, path: tuple[str, ...]
) -> None:
    text = _help(capsys, monkeypatch, path)
    found = examples(text)
    assert found, path
    assert all(e.startswith(("kubedra ", "cat ")) for e in found), found
    if path:
        assert all(f"kubedra {' '.join(path)}" in e for e in found), found
    assert "Exit status:" in text


def test_every_subcommand_has_its_own_description(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    firsts = []
    for path in LEAVES:
        text = _help(capsys, monkeypatch, path)
        body = [line.strip() for line in text.splitlines() if line.strip() and not line.strip().startswith("Usage:")]
        firsts.append(body[0])
    assert len(set(firsts)) == len(firsts), firsts


def _all_examples() -> list[tuple[str, str]]:
    out = io.StringIO()
    found: list[tuple[str, str]] = []
    for path in COMMANDS:
        saved = sys.stdout
        sys.stdout = out
        try:
            with pytest.MonkeyPatch.context() as patch:
                patch.setenv("COLUMNS", "400")
                patch.setenv("TERMINAL_WIDTH", "400")
                main([*path, "-h"])
        finally:
            sys.stdout = saved
        found.extend((" ".join(path) or "kubedra", e) for e in examples(out.getvalue()))
        out.seek(0)
        out.truncate()
    return found


ALL_EXAMPLES = _all_examples()


def _live(argv: list[str]) -> bool:
    return argv[0] == "snapshot" or "--kubeconfig" in argv or "--context" in argv


def _on_test_cluster(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, argv: list[str]
) -> list[str]:
    """A live example runs against the test control plane: its kubeconfig stands for the user's (named or
    $KUBECONFIG), and paths it writes land in a temporary directory (shipped inputs are made absolute first)."""
    from tests.controlplane.fixture import go_available

    if not go_available():
        pytest.skip("go is not on PATH: the test control plane cannot be built")
    plane = request.getfixturevalue("control_plane")
    monkeypatch.setenv("KUBECONFIG", str(plane.kubeconfig))
    argv = list(argv)
    for i, word in enumerate(argv[:-1]):
        if word == "--kubeconfig":
            argv[i + 1] = str(plane.kubeconfig)
        elif word in ("-f", "--filename") and argv[i + 1] != "-":
            argv[i + 1] = str(ROOT / argv[i + 1])
    monkeypatch.chdir(tmp_path)
    return argv


@pytest.mark.parametrize(("command", "example"), ALL_EXAMPLES, ids=[e for _, e in ALL_EXAMPLES])
def test_the_example_runs_as_documented(
    request: pytest.FixtureRequest,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    command: str,
    example: str,
) -> None:
    monkeypatch.chdir(ROOT)
    argv, stdin = _kubedra_argv(example)
    if _live(argv):
        argv = _on_test_cluster(request, monkeypatch, tmp_path, argv)
    if stdin is not None:
        monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
    inputs = [argv[i + 1] for i, word in enumerate(argv[:-1]) if word in ("-f", "--filename") and argv[i + 1] != "-"]
    inputs = [str(Path(p).relative_to(ROOT)) if Path(p).is_absolute() else p for p in inputs]
    shipped = [p for p in inputs if p.startswith(("examples/", "src/kubedra/data/")) and (ROOT / p).exists()]
    assert shipped == inputs, f"{example}: examples may only read files a fresh clone has"
    argv = [str(tmp_path / Path(word).name) if i > 0 and argv[i - 1] == "--html" else word
            for i, word in enumerate(argv)]  # a page written where the test can see it, not into the clone
    code = main(argv)
    out, err = capsys.readouterr()
    assert code == _expected_status(example), f"{command}: {example}\n{err}"
    if code == 0 and not _live(argv):
        assert out, example  # every successful example prints something (a live one: the test cluster may be empty)


@pytest.mark.parametrize("path", COMMANDS, ids=" ".join)
def test_help_names_values_as_kubectl_does_and_keeps_examples_whole_at_120_columns(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, path: tuple[str, ...]
) -> None:
    """No Python type as a placeholder (``<list[str]>``, ``<bool>``), and no example broken over two lines."""
    wide = _help(capsys, monkeypatch, path)
    monkeypatch.setenv("COLUMNS", "120")
    monkeypatch.setenv("TERMINAL_WIDTH", "120")
    main([*path, "--help"])
    text = capsys.readouterr().out
    assert not re.search(r"<(list\[|str>|int>|float|bool>|path>)", text, re.IGNORECASE), text
    lines = [line.strip(" │") for line in text.splitlines()]
    for example in examples(wide):
        assert example in lines, f"{example!r} wraps at 120 columns"
