"""The fidelity page's generated sections (docs/fidelity.md): written by ``scripts/fidelity``, compared by the tests
that produce them.

A section sits between ``<!-- BEGIN generated:NAME -->`` and ``<!-- END generated:NAME -->`` lines. The test
that runs a comparison renders its section from that run and fails when the page's differs
(``assert_section``), so a number in a section is always one CI measured. ``scripts/fidelity`` (needs the built
oracle) runs the same comparisons and rewrites the sections in place. ``census`` is the exception: a seeded
Hypothesis draw moves with the source, so its test (tests/differential/test_census_readme.py, deep mode) holds the
page's shares to a fresh census within a tolerance instead of to the digit.
"""

from __future__ import annotations

import difflib
import re
import sys
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "fidelity.md"


def _markers(name: str) -> tuple[str, str]:
    return f"<!-- BEGIN generated:{name} (scripts/fidelity writes it; do not edit) -->", f"<!-- END generated:{name} -->"


def _span(text: str, name: str) -> tuple[int, int]:
    begin, end = _markers(name)
    start = text.find(begin + "\n")
    stop = text.find(end, start)
    if start < 0 or stop < 0 or text.count(begin) != 1:
        raise LookupError(f"{PAGE.relative_to(ROOT)} has no single section {name!r} ({begin} ... {end})")
    return start + len(begin) + 1, stop


def section(name: str, text: str | None = None) -> str:
    """The body of section ``name`` as the page has it."""
    text = PAGE.read_text() if text is None else text
    start, stop = _span(text, name)
    return text[start:stop]


def replace(name: str, body: str, text: str) -> str:
    start, stop = _span(text, name)
    return text[:start] + body + text[stop:]


def assert_section(name: str, body: str) -> None:
    """Fail, with a diff and the command that fixes it, when the page's section is not ``body``."""
    current = section(name)
    if current != body:
        diff = "".join(difflib.unified_diff(current.splitlines(True), body.splitlines(True), str(PAGE.relative_to(ROOT)),
                                            "this run"))
        raise AssertionError(f"{PAGE.relative_to(ROOT)}'s generated:{name} section differs from this run; run scripts/fidelity\n"
                             + diff)


def numbers_in(pattern: str, text: str | None = None) -> list[int]:
    """The integers a regular expression's groups capture in the page (for numbers stated in prose)."""
    text = PAGE.read_text() if text is None else text
    found = re.search(pattern, text)
    if found is None:
        raise LookupError(f"{PAGE.relative_to(ROOT)} no longer says {pattern!r}")
    return [int(g.replace(",", "")) for g in found.groups()]


def _cel() -> str:
    sys.path.insert(0, str(ROOT / "tests" / "cel"))
    import upstream_fidelity

    tally = upstream_fidelity.compare_all()
    problems = upstream_fidelity.problems(tally)
    if problems:
        raise SystemExit("the CEL comparison does not pass; fix it or KNOWN first:\n" + "\n".join(problems))
    return upstream_fidelity.markdown(tally)


def _census() -> str:
    from tests.differential import census, profiles

    rows = {}
    for name in census.README_PROFILES:
        rows[name] = census.census(getattr(profiles, name), census.README_EXAMPLES, census.README_SEED, oracle=True)
        print(f"census {name}: {rows[name]['inputs']} inputs", file=sys.stderr, flush=True)
    return census.readme_table(rows)


def _kube_scheduler() -> str:
    from tests.kube import vs_kube_scheduler

    return vs_kube_scheduler.page_section()


SECTIONS: dict[str, Callable[[], str]] = {"cel": _cel, "census": _census, "kube-scheduler": _kube_scheduler}


def main(argv: list[str]) -> int:
    names = argv or sorted(SECTIONS)
    text = PAGE.read_text()
    for name in names:
        if name not in SECTIONS:
            raise SystemExit(f"no section {name!r}; sections: {', '.join(sorted(SECTIONS))}")
        body = SECTIONS[name]()
        changed = section(name, text) != body
        text = replace(name, body, text)
        print(f"{PAGE.relative_to(ROOT)} generated:{name}: {'rewritten' if changed else 'unchanged'}")
    PAGE.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
