"""How every kubedra output writes a span of simulated time: Go's duration style, shortened (``1h30m``, ``2.5s``).

Here, in the lowest layer, so the report, the HTML page and ``explain`` (in the scheduler) write durations alike;
reading durations (``kubedra.io/run-for``) is ``kubedra.sim.durations``.
"""

from __future__ import annotations


def format_duration(seconds: float) -> str:
    """Go-style durations (``1h30m0s`` → shortened to ``1h30m``) for timeline readability."""
    if seconds == 0:
        return "0s"
    whole = int(seconds)
    millis = round((seconds - whole) * 1000)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    parts = []
    if hours:
        parts.append(f"{hours}h")
    if minutes:
        parts.append(f"{minutes}m")
    if secs or millis:
        parts.append(f"{secs}.{millis:03d}s".replace(".000s", "s") if millis else f"{secs}s")
    return "".join(parts)
