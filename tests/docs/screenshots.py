"""The report's screenshots in docs/images/: the default run and a 5,000-node run where GPUs run short, each
written by ``kubedra simulate --html`` and photographed by headless Chromium. ``scripts/docs-screenshots`` runs it
(about a minute of CPU); the pictures are illustrations, so no test compares them: tests/report/ checks the page.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
IMAGES = ROOT / "docs" / "images"
sys.path.insert(0, str(ROOT / "benchmarks"))
import shapes  # noqa: E402

Doc = dict[str, Any]


def _later(doc: Doc, start_after: str, run_for: str) -> Doc:
    doc["spec"]["template"]["metadata"].setdefault("annotations", {}).update(
        {"kubedra.io/start-after": start_after, "kubedra.io/run-for": run_for})
    return doc


def five_thousand_nodes() -> list[Doc]:
    """2,500 H100 and 2,500 A100 nodes of 8 GPUs; a Deployment and a StatefulSet from the start, then a wave of
    4-GPU training Jobs and 1-GPU batch Jobs asking for more than is left, so pods wait and the waits end."""
    return [
        shapes._pool("h100", 2500, "H100-80GB", 8), shapes._pool("a100", 2500, "A100-80GB", 8),
        shapes._template("one-gpu"), shapes._template("two-gpus", 2), shapes._template("four-gpus", 4),
        shapes._controller("Deployment", "inference", 16000, "one-gpu", pod={"cpu": 2, "memory": "8Gi"}),
        shapes._controller("StatefulSet", "vector-db", 2000, "two-gpus", pod={"cpu": 8, "memory": "64Gi"}),
        _later(shapes._controller("Job", "finetune", 4000, "four-gpus", parallelism=4000), "30m", "2h"),
        _later(shapes._controller("Job", "batch", 8000, "one-gpu", parallelism=8000), "1h", "90m"),
    ]


def _shoot(chromium: str, page: Path, image: Path, scratch: Path) -> None:
    subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                    f"--user-data-dir={scratch / 'profile'}", f"--screenshot={image}", "--window-size=1100,1900",
                    page.as_uri()], capture_output=True, timeout=300, check=True)


def main() -> int:
    chromium = shutil.which("chromium") or shutil.which("google-chrome")
    if chromium is None:
        raise SystemExit("chromium not found (Debian package chromium)")
    IMAGES.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        scratch = Path(tmp)
        (scratch / "big.yaml").write_text(yaml.safe_dump_all(five_thousand_nodes()))
        for name, args in (("report-default", []), ("report-5000-nodes", ["-f", str(scratch / "big.yaml")])):
            page = scratch / f"{name}.html"
            subprocess.run([sys.executable, "-m", "kubedra", "simulate", "-q", *args, "--html", str(page)],
                           stdout=subprocess.DEVNULL, check=True, timeout=1200)
            _shoot(chromium, page, IMAGES / f"{name}.png", scratch)
            print(f"wrote docs/images/{name}.png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
