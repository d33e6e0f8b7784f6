"""Every performance table in the docs is what its results file renders (issue 39): a page edited by hand, or a
results file re-measured without re-rendering, fails here; ``python benchmarks/figures.py`` fixes it."""

from __future__ import annotations

import difflib
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))
import figures  # noqa: E402
import results  # noqa: E402


@pytest.mark.parametrize("page", figures.PAGES, ids=[p.name for p in figures.PAGES])
def test_each_page_shows_what_its_results_files_render(page: Path) -> None:
    text = page.read_text()
    new = figures.rendered(text)
    diff = "".join(difflib.unified_diff(text.splitlines(True), new.splitlines(True), str(page), "rendered"))
    assert new == text, f"{page.relative_to(ROOT)} is stale; run python benchmarks/figures.py\n{diff}"


def test_the_main_figures_are_rendered_not_typed() -> None:
    names = {name for page in figures.PAGES for name, _, _ in figures.sections(page.read_text())}
    assert {"shapes", "scaling", "openb", "affinity", "micro", "simulate", "vs_kube_scheduler",
            "side_by_side"} <= names
    for name in names:
        document = results.load(name)
        assert document["commit"] and document["machine"]["cores"], name
        assert not document["settings"]["quick"], name


def _fake(tmp_path: Path, **settings: object) -> Path:
    recorder = results.Recorder("openb", {"runs": 1, "nodes": 2, "arrivals": 10, **settings})
    recorder.add({"policy": "first-fit", "wall_s": results.figure([1.0]), "cpu_s": results.figure([1.0]),
                  "rss_mb": results.figure([50])})
    recorder.add({"policy": "kube-scheduler", "wall_s": results.figure([1.4, 1.5, 1.6]),
                  "cpu_s": results.figure([1.5]), "rss_mb": results.figure([60])})
    return recorder.save(tmp_path)


def test_a_section_renders_its_file_with_where_it_was_measured(tmp_path: Path) -> None:
    saved = json.loads(_fake(tmp_path, quick=False).read_text())
    page = "intro\n<!-- BEGIN figures:openb (generated) -->\nold\n<!-- END figures:openb -->\nend\n"
    new = figures.rendered(page, tmp_path)
    assert new.startswith("intro\n<!-- BEGIN figures:openb (generated) -->\n*Measured ")
    assert f"at commit `{saved['commit']}`" in new and f"on {saved['machine']['cores']} cores" in new
    assert "| kube-scheduler | 1.5 (1.40-1.60) | 1.5 | 7 | 60 | 1.50x |" in new
    assert new.endswith("<!-- END figures:openb -->\nend\n") and "old" not in new
    assert figures.rendered(new, tmp_path) == new


def test_a_quick_run_is_never_rendered(tmp_path: Path) -> None:
    _fake(tmp_path, quick=True)
    with pytest.raises(ValueError, match="--quick"):
        figures.render("openb", tmp_path)
