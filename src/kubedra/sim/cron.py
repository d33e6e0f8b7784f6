"""CronJob schedules as the CronJob controller reads them: ``github.com/robfig/cron/v3`` v3.0.1's ``ParseStandard``
and its schedules' ``Next``, which kube-controller-manager v1.37 calls (``pkg/controller/cronjob``).

Syntax: five fields (minute, hour, day of month, month, day of week), each a comma list of ``*``, ``?``, ``N``,
``N-M``, with an optional ``/step`` (``N/step`` is ``N-max/step``); months ``JAN``-``DEC`` and days ``SUN``-``SAT``
by name, any case; descriptors ``@yearly`` (``@annually``), ``@monthly``, ``@weekly``, ``@daily`` (``@midnight``),
``@hourly`` and ``@every <Go duration>``. When both day fields are restricted (neither starts with ``*`` or ``?``), a
day matches either; otherwise both (robfig's star bit: ``*/2`` in a field is not a star, ``*/1`` is).

``Next`` is robfig's own walk, month, day, hour, minute, second, in the schedule's zone, with Go's ``time.Date``
normalisation for wall-clock times a DST change skips or repeats, so times near transitions come out as the
controller's. The controller prepends ``TZ=<spec.timeZone>`` to the schedule; without ``spec.timeZone`` it uses its
own local zone, which kubedra takes to be UTC (kube-controller-manager's container image runs in UTC).
Times are Unix seconds (ints); ``None`` stands for robfig's zero time (no match within five years).
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from typing import NamedTuple
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from kubedra.objects.errors import KubedraError
from kubedra.sim.durations import SECOND, DurationError, parse_duration_ns

STAR = 1 << 63  # robfig's starBit: the field was * or ? (a step over 1 clears it)
_EPOCH = dt.date(1970, 1, 1).toordinal()
_UTC = ZoneInfo("UTC")
# Go's unicode.IsSpace (strings.Fields splits on it)
_GO_SPACE = frozenset("\t\n\v\f\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009"
                      "\u200a\u2028\u2029\u202f\u205f\u3000")
_MONTHS = {name: i + 1 for i, name in enumerate(
    ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"))}
_DAYS = {name: i for i, name in enumerate(("sun", "mon", "tue", "wed", "thu", "fri", "sat"))}
_INT64_MAX = (1 << 63) - 1


class CronError(KubedraError, ValueError):
    """A schedule robfig's parser refuses; the message is its own."""


class _Bounds(NamedTuple):
    low: int
    high: int
    names: dict[str, int] | None


SECONDS = _Bounds(0, 59, None)
MINUTES = _Bounds(0, 59, None)
HOURS = _Bounds(0, 23, None)
DOM = _Bounds(1, 31, None)
MONTHS = _Bounds(1, 12, _MONTHS)
DOW = _Bounds(0, 6, _DAYS)


def _bits(low: int, high: int, step: int) -> int:
    bits = 0
    for i in range(low, high + 1, step):
        bits |= 1 << i
    return bits


def _all(bounds: _Bounds) -> int:
    return _bits(bounds.low, bounds.high, 1) | STAR


class _Wall(NamedTuple):
    year: int
    month: int
    day: int
    hour: int
    minute: int
    second: int
    weekday: int  # Go's: Sunday 0


class _Zone:
    """Go's view of a location: wall clock of an instant, and ``time.Date``'s choice of instant for a wall clock."""

    def __init__(self, zone: dt.tzinfo) -> None:
        self.zone = zone

    def offset(self, unix: int) -> int:
        moment = dt.datetime.fromtimestamp(unix, self.zone)
        delta = moment.utcoffset()
        return 0 if delta is None else int(delta.total_seconds())

    def wall(self, unix: int) -> _Wall:
        days, seconds = divmod(unix + self.offset(unix), 86400)
        date = dt.date.fromordinal(_EPOCH + days)
        return _Wall(date.year, date.month, date.day, seconds // 3600, seconds // 60 % 60, seconds % 60,
                     (date.weekday() + 1) % 7)

    def date(self, year: int, month: int, day: int, *, hour: int = 0, minute: int = 0, second: int = 0) -> int:
        """``time.Date``: out-of-range months and days roll over; a wall time a transition skips or repeats gets the
        offset Go's two-step lookup picks (the zone at the wall time read as UTC, then at the instant that gives)."""
        year, month0 = year + (month - 1) // 12, (month - 1) % 12
        days = dt.date(year, month0 + 1, 1).toordinal() - _EPOCH + day - 1
        local = days * 86400 + hour * 3600 + minute * 60 + second
        return local - self.offset(local - self.offset(local))


@dataclass(frozen=True)
class SpecSchedule:
    """robfig's ``SpecSchedule``: a bit set per field (``STAR`` marks a ``*``/``?``) and a zone."""

    second: int
    minute: int
    hour: int
    dom: int
    month: int
    dow: int
    zone_name: str = "UTC"

    def day_matches(self, wall: _Wall) -> bool:
        dom = (1 << wall.day) & self.dom > 0
        dow = (1 << wall.weekday) & self.dow > 0
        if self.dom & STAR or self.dow & STAR:
            return dom and dow
        return dom or dow

    def _never(self) -> bool:
        """No time can match (a field such as ``,`` has no bits): robfig walks five years and gives up."""
        days = (self.dom & ~STAR) and (self.dow & ~STAR) if self.dom & STAR or self.dow & STAR \
            else (self.dom & ~STAR) or (self.dow & ~STAR)
        return not all((self.second & ~STAR, self.minute & ~STAR, self.hour & ~STAR, self.month & ~STAR, days))

    def next(self, after: float) -> int | None:
        """The first activation after ``after`` (Unix seconds), as robfig's ``SpecSchedule.Next``."""
        if self._never():
            return None
        walk = _Walk(self, _Zone(_zone(self.zone_name)), int(after // 1) + 1)  # t.Add(1*time.Second - nanoseconds)
        year_limit = walk.wall.year + 5
        while walk.wall.year <= year_limit:  # robfig's WRAP label: each stage that rolls over starts again
            if walk.months() and walk.days() and walk.hours() and walk.minutes() and walk.seconds():
                return walk.t
        return None


class _Walk:
    """robfig's walk from a time forward, field by field; each stage says False where it rolled over (``goto
    WRAP``). The first move of any stage first truncates the time to that field (robfig's ``added``)."""

    def __init__(self, spec: SpecSchedule, zone: _Zone, t: int) -> None:
        self.spec, self.zone, self.added = spec, zone, False
        self.t, self.wall = t, zone.wall(t)

    def _set(self, t: int) -> None:
        self.t, self.wall = t, self.zone.wall(t)

    def months(self) -> bool:
        while not (1 << self.wall.month) & self.spec.month:
            w = self.wall
            if not self.added:
                self.added = True
                self._set(self.zone.date(w.year, w.month, 1))
                w = self.wall
            self._set(self.zone.date(w.year, w.month + 1, w.day, hour=w.hour, minute=w.minute, second=w.second))
            if self.wall.month == 1:
                return False
        return True

    def days(self) -> bool:
        while not self.spec.day_matches(self.wall):
            w = self.wall
            if not self.added:
                self.added = True
                self._set(self.zone.date(w.year, w.month, w.day))
                w = self.wall
            self._set(self.zone.date(w.year, w.month, w.day + 1, hour=w.hour, minute=w.minute, second=w.second))
            hour = self.wall.hour
            if hour != 0:  # midnight skipped or repeated by a DST change: back to the day's start
                self._set(self.t + ((24 - hour) * 3600 if hour > 12 else -hour * 3600))
            if self.wall.day == 1:
                return False
        return True

    def hours(self) -> bool:
        while not (1 << self.wall.hour) & self.spec.hour:
            if not self.added:
                self.added = True
                w = self.wall
                self._set(self.zone.date(w.year, w.month, w.day, hour=w.hour))
            self._set(self.t + 3600)
            if self.wall.hour == 0:
                return False
        return True

    def minutes(self) -> bool:
        while not (1 << self.wall.minute) & self.spec.minute:
            if not self.added:
                self.added = True
                self.t -= self.t % 60  # Truncate(time.Minute): the absolute minute, not the wall clock's
            self._set(self.t + 60)
            if self.wall.minute == 0:
                return False
        return True

    def seconds(self) -> bool:
        while not (1 << self.wall.second) & self.spec.second:
            self.added = True
            self._set(self.t + 1)
            if self.wall.second == 0:
                return False
        return True


@dataclass(frozen=True)
class EverySchedule:
    """``@every <duration>``: robfig's ``ConstantDelaySchedule``, the duration floored to whole seconds (at least
    one)."""

    delay: int

    def next(self, after: float) -> int | None:
        return int(after // 1) + self.delay


Schedule = SpecSchedule | EverySchedule


def _zone(name: str) -> dt.tzinfo:
    if name in ("", "UTC"):
        return _UTC
    return ZoneInfo(name)


def load_location(name: str) -> str:
    """Go's ``time.LoadLocation`` for the names the API accepts; raises CronError ``unknown time zone X``."""
    if name in ("", "UTC"):
        return "UTC"
    try:
        ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        raise CronError(f"unknown time zone {name}") from None
    return name


def _go_quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _atoi(text: str) -> int:
    """``strconv.Atoi`` (base 10, optional sign, ASCII digits), with robfig's message around its errors."""
    body = text[1:] if text[:1] in ("+", "-") else text
    if not body or any(c not in "0123456789" for c in body):
        raise CronError(f"failed to parse int from {text}: strconv.Atoi: parsing {_go_quote(text)}: invalid syntax")
    value = int(body) * (-1 if text[0] == "-" else 1)
    if not -_INT64_MAX - 1 <= value <= _INT64_MAX:
        raise CronError(
            f"failed to parse int from {text}: strconv.Atoi: parsing {_go_quote(text)}: value out of range")
    return value


def _must_int(text: str) -> int:
    value = _atoi(text)
    if value < 0:
        raise CronError(f"negative number ({value}) not allowed: {text}")
    return value


def _go_lower(text: str) -> str:
    """``strings.ToLower`` closely enough for the names (one rune to one rune; U+0130 is ``i`` in Go)."""
    out = []
    for c in text:
        low = "i" if c == "\u0130" else c.lower()
        out.append(low if len(low) == 1 else c)
    return "".join(out)


def _int_or_name(text: str, names: dict[str, int] | None) -> int:
    if names is not None and _go_lower(text) in names:
        return names[_go_lower(text)]
    return _must_int(text)


def _span(low_high: list[str], bounds: _Bounds, expr: str) -> tuple[int, int, int]:
    """Start, end and the star bit of ``*``, ``?``, ``N`` or ``N-M`` (after a star, robfig reads no further)."""
    if low_high[0] in ("*", "?"):
        return bounds.low, bounds.high, STAR
    start = _int_or_name(low_high[0], bounds.names)
    if len(low_high) == 1:
        return start, start, 0
    if len(low_high) == 2:
        return start, _int_or_name(low_high[1], bounds.names), 0
    raise CronError(f"too many hyphens: {expr}")


def _range(expr: str, bounds: _Bounds) -> int:
    """robfig's ``getRange``: ``number | number "-" number [ "/" number ]`` (or ``*``/``?``)."""
    range_and_step = expr.split("/")
    low_high = range_and_step[0].split("-")
    start, end, extra = _span(low_high, bounds, expr)
    if len(range_and_step) > 2:
        raise CronError(f"too many slashes: {expr}")
    step = 1
    if len(range_and_step) == 2:
        step = _must_int(range_and_step[1])
        if len(low_high) == 1:  # "N/step" is "N-max/step"
            end = bounds.high
        if step > 1:
            extra = 0
    if start < bounds.low:
        raise CronError(f"beginning of range ({start}) below minimum ({bounds.low}): {expr}")
    if end > bounds.high:
        raise CronError(f"end of range ({end}) above maximum ({bounds.high}): {expr}")
    if start > end:
        raise CronError(f"beginning of range ({start}) beyond end of range ({end}): {expr}")
    if step == 0:
        raise CronError(f"step of range should be a positive number: {expr}")
    return _bits(start, end, step) | extra


def _field(text: str, bounds: _Bounds) -> int:
    bits = 0
    for expr in (part for part in text.split(",") if part):  # strings.FieldsFunc drops empty parts
        bits |= _range(expr, bounds)
    return bits


def _go_fields(text: str) -> list[str]:
    return [f for f in re.split("[" + re.escape("".join(sorted(_GO_SPACE))) + "]+", text) if f]


def _descriptor(spec: str, zone: str) -> Schedule:
    once = 1 << 0
    if spec in ("@yearly", "@annually"):
        return SpecSchedule(once, once, once, 1 << DOM.low, 1 << MONTHS.low, _all(DOW), zone)
    if spec == "@monthly":
        return SpecSchedule(once, once, once, 1 << DOM.low, _all(MONTHS), _all(DOW), zone)
    if spec == "@weekly":
        return SpecSchedule(once, once, once, _all(DOM), _all(MONTHS), 1 << DOW.low, zone)
    if spec in ("@daily", "@midnight"):
        return SpecSchedule(once, once, once, _all(DOM), _all(MONTHS), _all(DOW), zone)
    if spec == "@hourly":
        return SpecSchedule(once, once, _all(HOURS), _all(DOM), _all(MONTHS), _all(DOW), zone)
    if spec.startswith("@every "):
        try:
            nanoseconds = parse_duration_ns(spec[len("@every "):])
        except DurationError as err:
            raise CronError(f"failed to parse duration {spec}: {err}") from None
        nanoseconds = max(nanoseconds, SECOND)
        return EverySchedule((nanoseconds - nanoseconds % SECOND) // SECOND)
    raise CronError(f"unrecognized descriptor: {spec}")


def parse_standard(spec: str) -> Schedule:
    """robfig's ``ParseStandard`` (a ``TZ=``/``CRON_TZ=`` prefix included); the local zone is UTC."""
    if not spec:
        raise CronError("empty spec string")
    zone = "UTC"
    if spec.startswith(("TZ=", "CRON_TZ=")):
        space, eq = spec.find(" "), spec.find("=")
        if space < 0:  # robfig slices spec[eq+1:-1] and panics; the API server's recovery reports it so
            raise CronError(f"invalid schedule format: runtime error: slice bounds out of range [:{space}]")
        name = spec[eq + 1:space]
        try:
            zone = load_location(name)
        except CronError as err:
            raise CronError(f"provided bad location {name}: {err}") from None
        spec = spec[space:].strip("".join(_GO_SPACE))
    if spec.startswith("@"):
        return _descriptor(spec, zone)
    fields = _go_fields(spec)
    if len(fields) != 5:
        raise CronError(f"expected exactly 5 fields, found {len(fields)}: [{' '.join(fields)}]")
    return SpecSchedule(
        second=_field("0", SECONDS),
        minute=_field(fields[0], MINUTES),
        hour=_field(fields[1], HOURS),
        dom=_field(fields[2], DOM),
        month=_field(fields[3], MONTHS),
        dow=_field(fields[4], DOW),
        zone_name=zone,
    )


def controller_schedule(schedule: str, time_zone: str | None) -> Schedule:
    """What the controller parses (``formatSchedule``): ``TZ=<timeZone> <schedule>`` when a zone is set."""
    if time_zone is not None and "TZ" not in schedule:
        try:
            load_location(time_zone)
        except CronError:
            return parse_standard(schedule)
        return parse_standard(f"TZ={time_zone} {schedule}")
    return parse_standard(schedule)


def next_times(schedule: Schedule, after: float, count: int) -> list[int]:
    """Up to ``count`` activations after ``after``, each the schedule's ``Next`` of the one before."""
    times: list[int] = []
    t: float = after
    while len(times) < count:
        found = schedule.next(t)
        if found is None:
            break
        times.append(found)
        t = found
    return times
