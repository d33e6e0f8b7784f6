"""kubedra's CEL against upstream's own, as numbers: the comparison, its known differences and the README's table.

Each expression is compiled and evaluated on its devices by kubedra and by k8s.io/dynamic-resource-allocation/cel
(the Go oracle's ``cel`` mode, kube-scheduler's compiler and ``DeviceMatches``); five things are compared:
whether it compiles, the compile message when both refuse it, whether its estimated worst-case cost is over the
limit (what ``kubedra validate`` refuses), and per device the result or runtime error, and whether a runtime error
is the cost limit.

Inputs: the table-driven cases of test_environment.py, the regressions of test_differential.py, the cost cases
below, and ``upstream_corpus.json``, a frozen sample of test_differential.py's generator. The sample is frozen
because a seeded Hypothesis draw is not stable: Hypothesis mixes literals of the local source files (and of the
``.hypothesis`` directory's cache of them) into what it draws, so the same seed drew other expressions after any
edit anywhere, or on a checkout without ``.hypothesis``, and the README's counts could not be reproduced.
``python tests/cel/upstream_fidelity.py --new-corpus`` draws a new one (then run ``scripts/fidelity``).

Every difference must be listed in KNOWN by what is compared and the expression, with how many times it differs (per
device for results and runtime errors; per occurrence of the expression otherwise) and its reason; a new
difference, a listed one that no longer occurs, or one that differs another number of times fails the test. The
README's table (between its ``generated:cel`` markers) is ``markdown()`` of the run.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec

if __name__ == "__main__":  # run as a script: the sibling test modules and the repository root on the path
    sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parents[2])]

import test_differential as td
import test_environment as te
from cel_devices import make_view
from tests.conformance.oracle import oracle_path

from kubedra.cel import CelCompileError, CelRuntimeError, CompileCache, DeviceView
from kubedra.cel.cost import COST_LIMIT_MESSAGE
from kubedra.objects.model import Device

CORPUS = Path(__file__).with_name("upstream_corpus.json")
CORPUS_SEED = 15
CORPUS_DEVICES = 150
"""Generated devices (1-4 expressions each) in the frozen sample."""

TEN = "[1, 2, 3, 4, 5, 6, 7, 8, 9, 10]"
COST_CASES = [
    f"{TEN}.all(x, {TEN}.all(y, {TEN}.all(z, {TEN}.all(z2, {TEN}.all(z3, {TEN}.all(z4, "
    f"{TEN}.all(z5, int('1'.find('[0-9]*')) < 100)))))))",
    f"{TEN}.all(x, {TEN}.all(y, x + y > 0))",
    "device.attributes.all(a, device.attributes.all(b, device.attributes.all(c, device.attributes.all(d, true))))",
    'device.attributes["dra.example.com"].all(k, device.attributes["dra.example.com"].all(j, k != ""))',
    f'{TEN}.all(x, {TEN}.all(y, "a,b,c".split(",").size() == 3))',
    f'{TEN}.all(x, {TEN}.all(y, {TEN}.all(z, "a,b,c,d,e,f".split(",").size() == 6)))',
    f'{TEN}.all(x, {TEN}.all(y, {TEN}.all(z, {TEN}.all(w, "a,b".split(",").size() == 2))))',
    'device.attributes["dra.example.com"].model.split("0").size() > 0',
]

COMPILE = "compile accept/refuse"
MESSAGE = "compile message"
ESTIMATE = "estimated cost over the limit"
RESULT = "result or error"
RUNTIME_COST = "cost limit at runtime"
COMPARED = (COMPILE, ESTIMATE, RESULT, RUNTIME_COST, MESSAGE)
"""In the README table's order."""
LABELS = {
    COMPILE: "compiles or is refused",
    ESTIMATE: "estimated cost over the limit (refused by `validate`)",
    RESULT: "result or runtime error, per device",
    RUNTIME_COST: "a runtime error is the cost limit, per device",
    MESSAGE: "compile message, when both refuse",
}

FLOORS = {COMPILE: 431, ESTIMATE: 421, RESULT: 429, RUNTIME_COST: 146, MESSAGE: 10}
"""At least this many comparisons of each kind (the README's counts when they were first asserted): the
comparison may grow, never shrink unnoticed."""


@dataclass(frozen=True)
class Reason:
    label: str
    text: str


REASONS = {
    "unbounded-estimate": Reason(
        "upstream's estimate is unbounded",
        "cel-go's estimator gives `.matches()` and `.contains()` on attribute values, and `isSorted()`, an "
        "effectively unbounded cost (1.8e18 and more), so upstream's worst case is over the limit; kubedra's is "
        "finite (cel/cost.py bounds it from the checked tree with Kubernetes' per-device maxima, e.g. "
        "64-character attribute values, and a literal's own size)",
    ),
    "semver-in-list": Reason(
        "cel-go fails `semver in [...]`",
        "cel-go answers `internal error: hash of unhashable type cel.Semver` for a version attribute `in` a constant "
        "list (it hashes the value for the constant set); kubedra answers false, as `in` does for values of another "
        "type",
    ),
    "iteration-limit": Reason(
        "cel-cpp's comprehension limit",
        "cel-cpp stops comprehensions after 10,000 iterations in all (`Iteration budget exceeded`), an error; "
        "cel-go has no such limit below the cost limit and answers",
    ),
    "wording": Reason(
        "wording",
        "both refuse the expression, in other words: cel-cpp writes a member overload's types as `(A, B)` where "
        "cel-go writes `A.(B)`, and calls a global-only function used as a method an undeclared reference where "
        "cel-go finds no matching overload; kubedra refuses an expression past 10,240 bytes before compiling it, "
        "with the API server's validation message, where upstream's compiler reports the undeclared identifier",
    ),
}


@dataclass(frozen=True)
class Known:
    """One known difference: what is compared, the exact expression, how many times it differs (per device for
    results and runtime errors, per occurrence of the expression otherwise), and why."""

    what: str
    expression: str
    times: int
    reason: str


KNOWN: list[Known] = [
    Known(ESTIMATE, '["a", "b"].isSorted()', 1, "unbounded-estimate"),
    Known(ESTIMATE, 'device.attributes.gpu["ok"].contains(" a0B")', 1, "unbounded-estimate"),
    Known(ESTIMATE, 'device.attributes.gpu.uuid.matches("[0-9]+")', 4, "unbounded-estimate"),
    Known(MESSAGE, 'quantity("1").isLessThan(semver("1.0.0"))', 1, "wording"),
    Known(MESSAGE, "x" * 10241, 1, "wording"),
    Known(MESSAGE, 'quantity("1").sign() == 1', 1, "wording"),
    Known(RESULT, COST_CASES[6], 2, "iteration-limit"),
    Known(RESULT, 'device.attributes["gpu.example.com"]["count"] != "" && '
          'device.attributes["gpu.example.com"]["index"] in ["", ""]', 1, "semver-in-list"),
    Known(RESULT, 'device.attributes["gpu"]["ver"] in ["", ""]', 3, "semver-in-list"),
    Known(RESULT, 'device.attributes["gpu.example.com"]["cores"] in ["", ""]', 3, "semver-in-list"),
    Known(RESULT, 'device.attributes["dra.example.com"]["cores"] in [1, 0]', 1, "semver-in-list"),
]


@dataclass
class Tally:
    """Agreement counts by what is compared, and every difference as (what, expression) -> details."""

    counts: dict[str, list[int]] = field(default_factory=dict)
    differences: dict[tuple[str, str], list[str]] = field(default_factory=dict)

    def check(self, what: str, expression: str, agree: bool, detail: str) -> None:
        seen = self.counts.setdefault(what, [0, 0])
        seen[0] += agree
        seen[1] += 1
        if not agree:
            self.differences.setdefault((what, expression), []).append(detail)

    def agree(self, what: str) -> int:
        return self.counts.get(what, [0, 0])[0]

    def total(self, what: str) -> int:
        return self.counts.get(what, [0, 0])[1]

    def report(self) -> str:
        return "; ".join(f"{what} {a}/{n}" for what, (a, n) in sorted(self.counts.items()))


def _short(expression: str) -> str:
    return expression if len(expression) < 160 else expression[:157] + "..."


def device_json(driver: str, device: Device) -> dict[str, Any]:
    """A device as the oracle's ``cel`` mode reads it."""
    out: dict[str, Any] = {"driver": driver}
    if device.allow_multiple_allocations is not None:
        out["allowMultipleAllocations"] = device.allow_multiple_allocations
    if device.attributes:
        out["attributes"] = {k: msgspec.to_builtins(v) for k, v in device.attributes.items()}
    if device.capacity:
        out["capacity"] = {k: {"value": c.value} for k, c in device.capacity.items()}
    return out


def draw_corpus(seed: int = CORPUS_SEED, count: int = CORPUS_DEVICES) -> list[dict[str, Any]]:
    """A fresh sample of test_differential.py's generator: [{driver, device, expressions}]."""
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as hypothesis_seed

    drawn: list[dict[str, Any]] = []

    @settings(max_examples=count, deadline=None, derandomize=False, database=None,
              suppress_health_check=list(HealthCheck), phases=[Phase.generate])
    @hypothesis_seed(seed)
    @given(td.cases())
    def draw(case: tuple[str, Device, list[str]]) -> None:
        driver, device, expressions = case
        drawn.append({"driver": driver, "device": msgspec.to_builtins(device), "expressions": expressions})

    draw()
    return drawn


def write_corpus(entries: list[dict[str, Any]]) -> None:
    """One device a line, consecutive draws of the same device merged."""
    merged: list[dict[str, Any]] = []
    for entry in entries:
        if merged and (merged[-1]["driver"], merged[-1]["device"]) == (entry["driver"], entry["device"]):
            merged[-1]["expressions"] += entry["expressions"]
        else:
            merged.append(entry)
    CORPUS.write_text("[\n" + ",\n".join(json.dumps(e, ensure_ascii=False) for e in merged) + "\n]\n")


def load_corpus() -> list[tuple[str, list[DeviceView]]]:
    cases = []
    for entry in json.loads(CORPUS.read_text()):
        view = DeviceView(entry["driver"], msgspec.convert(entry["device"], Device))
        cases.extend((expression, [view]) for expression in entry["expressions"])
    return cases


def cases() -> list[tuple[str, list[DeviceView]]]:
    """Every expression with the devices it is evaluated on."""
    gpu = make_view(te.GPU, te.CAP)
    out = [(expr, [gpu]) for expr, _ in te.CASES]
    out += [(expr, [gpu]) for expr, _ in te.COMPILE_ERRORS]
    for reg in td.REGRESSIONS:
        expr, attributes, capacity = reg.values if hasattr(reg, "values") else reg
        out.append((expr, [make_view(attributes, capacity)]))
    out += [(expr, [gpu, make_view({f"a{i}": i for i in range(20)})]) for expr in COST_CASES]
    return out + load_corpus()


def upstream(batch: list[tuple[str, list[DeviceView]]], version: str = "1.37") -> list[dict[str, Any]]:
    payload = {"cases": [{"expression": expr, "devices": [device_json(v.driver, v.device) for v in views]}
                         for expr, views in batch]}
    proc = subprocess.run([str(oracle_path(version)), "cel"], input=json.dumps(payload), capture_output=True,
                          text=True, timeout=300, check=True)
    out: list[dict[str, Any]] = json.loads(proc.stdout)
    return out


def _ours(cache: CompileCache, expr: str, views: list[DeviceView]) -> tuple[str | None, bool, list[Any]]:
    try:
        program = cache.compile(expr)
    except CelCompileError as exc:
        return str(exc), False, []
    results: list[Any] = []
    for view in views:
        try:
            results.append(program.evaluate(view))
        except CelRuntimeError as exc:
            results.append(("error", str(exc)))
    return None, program.cost_guarded, results


def compare_all() -> Tally:
    """Every case through both; the tally of what agrees and of every difference."""
    batch = cases()
    cache = CompileCache()
    tally = Tally()
    for (expr, views), theirs in zip(batch, upstream(batch), strict=True):
        error, guarded, results = _ours(cache, expr, views)
        short = _short(expr)
        their_error = theirs["compile_error"]
        tally.check(COMPILE, expr, (error is None) == (their_error is None),
                    f"{short!r}: kubedra {error!r}, upstream {their_error!r}")
        if error is not None and their_error is not None:
            tally.check(MESSAGE, expr, error == their_error, f"{short!r}: kubedra {error!r}, upstream {their_error!r}")
        if error is not None or their_error is not None:
            continue
        over = theirs["max_cost"] > theirs["cost_limit"]
        tally.check(ESTIMATE, expr, guarded == over,
                    f"{short!r}: kubedra guarded={guarded}, upstream max_cost={theirs['max_cost']}")
        for view, ours, their in zip(views, results, theirs["results"], strict=True):
            same = ours is their["match"] if their["error"] is None else isinstance(ours, tuple)
            tally.check(RESULT, expr, same, f"{short!r} on {device_json(view.driver, view.device)}: kubedra "
                        f"{ours!r}, upstream {their['match'] if their['error'] is None else their['error']!r}")
            if isinstance(ours, tuple) and their["error"] is not None:
                ours_cost = ours[1] == COST_LIMIT_MESSAGE
                their_cost = "cost limit exceeded" in their["error"]
                tally.check(RUNTIME_COST, expr, ours_cost == their_cost,
                            f"{short!r}: kubedra {ours[1]!r}, upstream {their['error']!r}")
    return tally


def problems(tally: Tally) -> list[str]:
    """What makes the run fail: differences KNOWN does not list, listed ones gone or differing another number of
    times, comparisons below the floors."""
    out = []
    known = {(k.what, k.expression): k for k in KNOWN}
    if len(known) != len(KNOWN):
        out.append("KNOWN lists an expression twice")
    out += [f"KNOWN: unknown reason {k.reason!r}" for k in KNOWN if k.reason not in REASONS]
    for key, details in sorted(tally.differences.items()):
        entry = known.get(key)
        if entry is None:
            out += [f"new difference, {d}" if i == 0 else f"  also {d}" for i, d in enumerate(details)]
        elif entry.times != len(details):
            out.append(f"{key[0]}: {_short(key[1])!r} differs {len(details)} time(s), KNOWN says "
                       f"{entry.times}: {details[0]}")
    out += [f"listed in KNOWN, no longer differs: {k.what}: {_short(k.expression)!r}"
            for k in KNOWN if (k.what, k.expression) not in tally.differences]
    for what, floor in FLOORS.items():
        if tally.total(what) < floor:
            out.append(f"{what}: {tally.total(what)} comparisons, fewer than the floor of {floor}")
    return out


def expressions(tally: Tally) -> int:
    return tally.total(COMPILE)


def markdown(tally: Tally) -> str:
    """The README's table and the known differences by reason, from this run."""
    by_reason: dict[str, Counter[str]] = {}
    for k in KNOWN:
        by_reason.setdefault(k.what, Counter())[k.reason] += k.times
    lines = [
        f"{expressions(tally)} expressions on their devices; generated by `scripts/fidelity` from the run "
        "`tests/cel/test_upstream_cel.py` checks:",
        "",
        "| compared | agree | of | differences, each listed by expression in `KNOWN` |",
        "|---|---:|---:|---|",
    ]
    for what in COMPARED:
        reasons = by_reason.get(what, Counter())
        listed = ", ".join(f"{REASONS[r].label} ({n})" for r, n in sorted(reasons.items())) or "none"
        lines.append(f"| {LABELS[what]} | {tally.agree(what)} | {tally.total(what)} | {listed} |")
    lines.append("")
    for key in sorted({k.reason for k in KNOWN}):
        lines += textwrap.wrap(f"- {REASONS[key].label}: {REASONS[key].text}.", 118, subsequent_indent="  ",
                               break_on_hyphens=False, break_long_words=False)
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    if argv == ["--new-corpus"]:
        write_corpus(draw_corpus())
        print(f"{CORPUS}: {len(load_corpus())} expressions; now run scripts/fidelity and update KNOWN")
        return 0
    tally = compare_all()
    print(tally.report())
    for problem in problems(tally):
        print(problem)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
