"""The docs site builds with ``mkdocs build --strict``: no broken link or anchor, no page missing from the nav."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from tests.docs.pages import DOCS, ROOT

CONFIG = ROOT / "mkdocs.yml"


def _nav_pages(nav: list[object]) -> list[str]:
    found: list[str] = []
    for entry in nav:
        value = next(iter(entry.values())) if isinstance(entry, dict) else entry
        found.extend(_nav_pages(value) if isinstance(value, list) else [str(value)])
    return found


def test_the_nav_names_existing_pages_once() -> None:
    config = yaml.safe_load(CONFIG.read_text())
    names = _nav_pages(config["nav"])
    assert len(names) == len(set(names))
    assert all((DOCS / name).is_file() for name in names), [n for n in names if not (DOCS / n).is_file()]
    assert config["strict"] is True


@pytest.mark.slow
def test_mkdocs_builds_strictly(tmp_path: Path) -> None:
    site = tmp_path / "site"
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", str(CONFIG),
                           "--site-dir", str(site)], capture_output=True, text=True, timeout=300, check=False,
                          env={"NO_MKDOCS_2_WARNING": "1", "PATH": str(Path(sys.executable).parent)})
    assert done.returncode == 0, done.stderr
    assert "WARNING" not in done.stderr, done.stderr
    for page in ("index.html", "getting-started/index.html", "reference/commands/index.html",
                 "tutorials/monitor/index.html", "fidelity/index.html", "performance/index.html"):
        assert (site / page).is_file(), page
    commands = (site / "reference" / "commands" / "index.html").read_text()
    assert 'id="kubedra-simulate"' in commands
