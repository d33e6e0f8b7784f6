"""The ``helm`` fixture: Helm v4 built from helm.sh/helm/v4 (tests/helm/build.sh), once per session."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
HELM = HERE / "bin" / "helm"


@pytest.fixture(scope="session")
def helm() -> Path:
    """The helm binary; built here when missing (Go's caches make that seconds once warm). Without go the chart
    tests skip, except in CI, whose machines have go: there a missing go fails rather than skipping silently."""
    if not HELM.is_file():
        if shutil.which("go") is None:
            if os.environ.get("CI") == "true":
                pytest.fail("go not found, but CI=true: the Helm chart tests must run in CI")
            pytest.skip("go is not on PATH: helm (tests/helm) cannot be built")
        subprocess.run([str(HERE / "build.sh")], check=True)
    return HELM
