"""The helm the chart tests use is the one go.mod pins (a stale bin/helm from another version would be caught)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

HERE = Path(__file__).resolve().parent


def test_helm_is_the_pinned_version(helm: Path) -> None:
    pinned = re.search(r"^require helm\.sh/helm/v4 (v\S+)", (HERE / "go.mod").read_text(), re.MULTILINE)
    assert pinned is not None
    out = subprocess.run([str(helm), "version", "--short"], check=True, capture_output=True, text=True).stdout
    assert out.strip() == pinned.group(1)
