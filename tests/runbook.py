"""The blocks of docs/migrating-from-device-plugin.md, for the tests that keep it true."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RUNBOOK = ROOT / "docs" / "migrating-from-device-plugin.md"


@dataclass
class Block:
    tag: str
    text: str
    line: int  # 1-based line of the opening fence


def blocks(path: Path = RUNBOOK) -> list[Block]:
    found, lines = [], path.read_text().splitlines()
    i = 0
    while i < len(lines):
        match = re.fullmatch(r"```(\w*)", lines[i])
        if match:
            end = lines.index("```", i + 1)
            found.append(Block(match.group(1), "\n".join(lines[i + 1 : end]), i + 1))
            i = end
        i += 1
    return found


@dataclass
class Command:
    command: str
    expected: str
    line: int


def console_commands(path: Path = RUNBOOK) -> list[Command]:
    """Every ``$ `` line of the console blocks, with the lines after it up to the next one (its output)."""
    commands: list[Command] = []
    for block in blocks(path):
        if block.tag != "console":
            continue
        for offset, line in enumerate(block.text.splitlines()):
            if line.startswith("$ "):
                commands.append(Command(line[2:], "", block.line + 1 + offset))
            else:
                assert commands and commands[-1].line > block.line, f"{path}:{block.line}: output before a command"
                commands[-1].expected += line + "\n"
    return commands
