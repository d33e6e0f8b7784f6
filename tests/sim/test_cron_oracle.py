"""CronJob schedules against robfig/cron v3.0.1 itself (the oracle's ``cron-next``, the library kube-controller-manager
v1.37.2's CronJob controller parses and steps schedules with): generated schedules of every syntax robfig accepts
and many it refuses, in zones with DST changes (at 02:00, at midnight, by 30 minutes), from starts across a century.
Each activation ``kubedra.sim.cron`` computes, and each parse error's text, must be the library's."""

from __future__ import annotations

import datetime as dt
import json
import subprocess
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests import depth
from tests.conformance.oracle import go_available, oracle_path

from kubedra.sim.cron import CronError, controller_schedule, next_times

ZONES = ["", "UTC", "America/New_York", "Europe/London", "Europe/Berlin", "Australia/Lord_Howe", "Asia/Kolkata",
         "America/Sao_Paulo", "America/Havana", "Asia/Beirut", "America/Santiago", "Pacific/Chatham", "Asia/Tehran",
         "Africa/Casablanca", "America/St_Johns", "Pacific/Apia", "Asia/Kathmandu"]
MONTH_NAMES = ["JAN", "feb", "Mar", "APR", "may", "JUN", "jul", "AUG", "sep", "OCT", "nov", "DEC"]
DAY_NAMES = ["SUN", "mon", "Tue", "WED", "thu", "FRI", "sat"]
COUNT = 6


def _value(low: int, high: int, names: list[str] | None) -> st.SearchStrategy[str]:
    numbers = st.integers(low, high).map(str)
    wide = st.integers(low - 2, high + 3).map(str)  # a little outside the field: robfig's range errors
    if names:
        return st.one_of(numbers, wide, st.sampled_from(names))
    return st.one_of(numbers, numbers, wide)


def _range(low: int, high: int, names: list[str] | None) -> st.SearchStrategy[str]:
    value = _value(low, high, names)
    step = st.one_of(st.integers(1, 7), st.integers(0, 70)).map(str)
    base = st.one_of(st.sampled_from(["*", "?"]), value, st.tuples(value, value).map("-".join))
    return st.one_of(base, st.tuples(base, step).map("/".join))


def _field(low: int, high: int, names: list[str] | None = None) -> st.SearchStrategy[str]:
    return st.one_of(
        st.just("*"),
        _range(low, high, names),
        st.lists(_range(low, high, names), min_size=1, max_size=3).map(",".join),
    )


SPEC = st.tuples(_field(0, 59), _field(0, 23), _field(1, 31), _field(1, 12, MONTH_NAMES), _field(0, 6, DAY_NAMES)
                 ).map(" ".join)
DESCRIPTORS = st.one_of(
    st.sampled_from(["@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly", "@every",
                     "@often", "@every 1d", "@every 0s", "@every -1h"]),
    st.tuples(st.integers(0, 100_000), st.sampled_from(["s", "m", "h", "ms", "ms5s"])).map(
        lambda t: f"@every {t[0]}{t[1]}"),
)
ODD = st.sampled_from(["", "* * * *", "* * * * * *", "*/0 * * * *", "1-2-3 * * * *", "1/2/3 * * * *", "a * * * *",
                       "-1 * * * *", "+5 * * * *", ", * * * *", "0 0 30 2 *", "0 0 31 4,6,9,11 *", "0 0 29 2 *",
                       "*\t*  * * *", "0 0 * * 7", "*-5 * * * *", "? ? ? ? ?", "5/15 * * * *", "0 0 31 * *",
                       "0 0 1-7 * MON", "0 0 */2 * 1", "0 0 * * */2", "30 1 * * *", "0 2 * * *", "0 0 * * *"])
CASE = st.fixed_dictionaries({
    "schedule": st.one_of(SPEC, SPEC, SPEC, DESCRIPTORS, ODD),
    "timeZone": st.sampled_from(ZONES),
    # 1971 to 2069: starts near the DST changes come often enough from the range alone
    "start": st.integers(31_536_000, 3_155_760_000),
    "count": st.just(COUNT),
})


def _kubedra(case: dict[str, Any]) -> dict[str, Any]:
    try:
        schedule = controller_schedule(case["schedule"], case["timeZone"] or None)
    except CronError as err:
        return {"error": str(err), "times": []}
    return {"times": next_times(schedule, case["start"], case["count"])}


def _oracle(cases: list[dict[str, Any]]) -> list[dict[str, Any]]:
    binary = oracle_path()
    if not binary.exists():
        raise FileNotFoundError(f"{binary} is missing: run tests/oracle/build.sh")
    answer = subprocess.run([str(binary), "cron-next"], input=json.dumps(cases), capture_output=True, text=True,
                            timeout=120, check=True)
    out: list[dict[str, Any]] = json.loads(answer.stdout)
    return out


pytestmark = [
    pytest.mark.oracle,
    pytest.mark.skipif(not go_available(), reason="go is not on PATH: the upstream oracle cannot be built"),
]


@settings(max_examples=depth.examples(15, 300, "KUBEDRA_CRON_EXAMPLES"), deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.lists(CASE, min_size=30, max_size=30))
def test_next_activations_are_robfigs(cases: list[dict[str, Any]]) -> None:
    for case, expected in zip(cases, _oracle(cases), strict=True):
        assert _same(_kubedra(case), expected), case


def _same(ours: dict[str, Any], robfigs: dict[str, Any]) -> bool:
    """Equal, but for the hint kubedra adds after Go's own duration error (``@every 1d``: days are not a unit)."""
    error, expected = ours.get("error"), robfigs.get("error")
    if error and expected and error.startswith(expected + "; "):
        ours = {**ours, "error": expected}
    return ours == robfigs


def _changes_2026(zone: str) -> list[int]:
    """Midnight UTC of the day before each change of the zone's UTC offset in 2026."""
    tz = ZoneInfo(zone or "UTC")
    days = [dt.datetime(2026, 1, 1, tzinfo=dt.UTC) + dt.timedelta(days=d) for d in range(366)]
    offsets = [day.astimezone(tz).utcoffset() for day in days]
    return [int(days[i - 2].timestamp()) for i in range(2, len(days)) if offsets[i] != offsets[i - 1]]


def test_activations_around_dst_changes_are_robfigs() -> None:
    """Hand-picked: two days of every hour and half hour from the day before each change of 2026 in the zones above
    (02:00 skipped and repeated, midnight skipped, 30-minute shifts), daily runs at the changing hours, and the
    day-of-month/day-of-week OR."""
    schedules = ["0 * * * *", "30 * * * *", "0 0 * * *", "30 2 * * *", "0 0 13 * FRI", "0 0 1-7 * MON"]
    cases = [{"schedule": s, "timeZone": z, "start": t, "count": 50}
             for z in ZONES for t in _changes_2026(z) for s in schedules]
    assert len(cases) > 100
    for case, expected in zip(cases, _oracle(cases), strict=True):
        assert _same(_kubedra(case), expected), case
