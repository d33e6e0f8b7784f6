"""Go duration syntax (``time.ParseDuration``), parsed exactly, for ``kubedra.io/start-after`` and ``run-for``.

``1h30m``, ``90s``, ``250ms``, ``1.5h``, ``0``; units ns, us, µs, μs, ms, s, m, h. Error texts are Go's
(``time: unknown unit "d" in duration "1d"``), with a hint for the usual slips: ISO 8601 (``PT10M``),
days, spaces. Also a simulated instant written as an API timestamp (``deletion_stamp``).
"""

from __future__ import annotations

import datetime as dt

from kubedra.objects.errors import KubedraError

NANOSECOND = 1
MICROSECOND = 1000 * NANOSECOND
MILLISECOND = 1000 * MICROSECOND
SECOND = 1000 * MILLISECOND
MINUTE = 60 * SECOND
HOUR = 60 * MINUTE

UNITS = {
    "ns": NANOSECOND,
    "us": MICROSECOND,
    "\u00b5s": MICROSECOND,  # U+00B5 micro sign
    "\u03bcs": MICROSECOND,  # U+03BC Greek small letter mu
    "ms": MILLISECOND,
    "s": SECOND,
    "m": MINUTE,
    "h": HOUR,
}
_MAX = 1 << 63


class DurationError(KubedraError, ValueError):
    """A string that is not a Go duration; the message is Go's, plus a hint where one helps."""


def _quote(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace('"', '\\"')
    return f'"{escaped}"'


def _hint(text: str) -> str:
    stripped = text.strip().upper()
    if stripped.startswith(("P", "-P", "+P")):
        return "; ISO 8601 durations are not accepted, write Go durations such as 10m, 1h30m or 90s"
    if text != text.strip() or " " in text:
        return "; write the duration without spaces, e.g. 1h30m"
    if text.rstrip().endswith("d"):
        return "; days are not a Go duration unit, write hours, e.g. 24h"
    return ""


def _fail(message: str, text: str) -> DurationError:
    return DurationError(message + _hint(text))


def _leading_int(s: str) -> tuple[int, str, bool]:
    """Digits at the start of ``s`` as an int; overflow flag when it passes 2^63, as Go's leadingInt."""
    i, value = 0, 0
    while i < len(s) and "0" <= s[i] <= "9":
        if value > _MAX // 10:
            return 0, s, True
        value = value * 10 + ord(s[i]) - 48
        if value > _MAX:
            return 0, s, True
        i += 1
    return value, s[i:], False


def _leading_fraction(s: str) -> tuple[int, float, str]:
    """Go's leadingFraction: digits after the dot, the scale they need, and what is left."""
    i, value, scale, overflow = 0, 0, 1.0, False
    while i < len(s) and "0" <= s[i] <= "9":
        if not overflow:
            if value > (_MAX - 1) // 10:
                overflow = True
            else:
                candidate = value * 10 + ord(s[i]) - 48
                if candidate > _MAX:
                    overflow = True
                else:
                    value = candidate
                    scale *= 10
        i += 1
    return value, scale, s[i:]


def _component(s: str, text: str) -> tuple[int, str]:
    """One ``[0-9]*(.[0-9]*)?unit`` from the front of ``s``: its nanoseconds and the rest."""
    if not (s[0] == "." or "0" <= s[0] <= "9"):
        raise _fail(f"time: invalid duration {_quote(text)}", text)
    before = len(s)
    value, s, overflow = _leading_int(s)
    if overflow:
        raise _fail(f"time: invalid duration {_quote(text)}", text)
    pre = before != len(s)
    fraction, scale, post = 0, 1.0, False
    if s and s[0] == ".":
        s = s[1:]
        before = len(s)
        fraction, scale, s = _leading_fraction(s)
        post = before != len(s)
    if not pre and not post:
        raise _fail(f"time: invalid duration {_quote(text)}", text)
    i = 0
    while i < len(s) and not (s[i] == "." or "0" <= s[i] <= "9"):
        i += 1
    if i == 0:
        raise _fail(f"time: missing unit in duration {_quote(text)}", text)
    unit_text, s = s[:i], s[i:]
    unit = UNITS.get(unit_text)
    if unit is None:
        raise _fail(f"time: unknown unit {_quote(unit_text)} in duration {_quote(text)}", text)
    if value > _MAX // unit:
        raise _fail(f"time: invalid duration {_quote(text)}", text)
    value *= unit
    if fraction > 0:
        value += int(float(fraction) * (float(unit) / scale))
        if value > _MAX:
            raise _fail(f"time: invalid duration {_quote(text)}", text)
    return value, s


def parse_duration_ns(text: str) -> int:
    """Nanoseconds in a Go duration string; raises DurationError with Go's message."""
    s, negative = text, False
    if s and s[0] in "+-":
        negative, s = s[0] == "-", s[1:]
    if s == "0":
        return 0
    if not s:
        raise _fail(f"time: invalid duration {_quote(text)}", text)
    total = 0
    while s:
        value, s = _component(s, text)
        total += value
        if total > _MAX:
            raise _fail(f"time: invalid duration {_quote(text)}", text)
    if negative:
        return -total
    if total > _MAX - 1:
        raise _fail(f"time: invalid duration {_quote(text)}", text)
    return total


def parse_duration(text: str) -> float:
    """Seconds in a Go duration string (``"1h30m"`` -> 5400.0)."""
    return parse_duration_ns(text) / SECOND


def deletion_stamp(seconds: float) -> str:
    """The ``deletionTimestamp`` of a pod deleted at simulated second ``seconds`` (RFC 3339, whole seconds as the API
    server writes it; the run's start read as the Unix epoch). Only its presence is read."""
    return dt.datetime.fromtimestamp(int(seconds), dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
