"""``simulate --serve``: the simulation run under the metrics server's lock, and the wait until interrupted."""

from __future__ import annotations

import os
import tempfile
import threading
from pathlib import Path
from typing import Any

import typer

from kubedra.cli.output import EXIT_INVALID_INPUT, stderr_console


def start_server(source: Any, listen: str) -> Any:
    """A started ``MetricsServer`` on ``listen`` (HOST:PORT), or exit 2 saying why it cannot listen."""
    from kubedra.metrics.serve import MetricsServer, parse_listen

    try:
        host, port = parse_listen(listen)
        server = MetricsServer(source, host, port).start()
    except (ValueError, OSError) as exc:
        stderr_console().print(f"error: --listen {listen}: {exc}", highlight=False, markup=False)
        raise typer.Exit(EXIT_INVALID_INPUT) from exc
    host, port = server.address
    where = f"[{host}]" if ":" in host else host
    stderr_console().print(f"Serving http://{where}:{port}/metrics", highlight=False, markup=False)
    return server


def serve_simulation(scenario: Any, options: Any, listen: str, speed: float | None) -> Any:
    """Run the simulation with ``/metrics`` served from its state; the server keeps running after the run."""
    from kubedra.metrics.embedded import StateSource, run_paced
    from kubedra.sim.simulate import prepare

    simulation = prepare(scenario, options)
    lock = threading.Lock()
    source = StateSource(simulation.state, options.features, lock, clock=lambda: simulation.now,
                         fragmentation=simulation.fragmentation_now)
    start_server(source, listen)
    return run_paced(simulation, lock, speed)


def wait_forever() -> None:
    """Block until Ctrl-C (SIGTERM ends the process as it always does)."""
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        raise typer.Exit(0) from None


def _umask() -> int:
    mask = os.umask(0o022)  # reading the umask sets it: put it back at once
    os.umask(mask)
    return mask


def write_html(path: Path, result: Any, report: Any, lines: list[str]) -> None:
    """``simulate --html FILE``: the simulation's report page (``write_page``)."""
    from kubedra.report import html_report

    write_page(path, html_report(result, report.summary, lines))


def write_page(path: Path, text: str) -> None:
    """``--html FILE``: written to a temporary name beside it and renamed, so never half-written; exit 2 on error.
    The file gets a normal file's permissions (0666 less the umask, as ``open`` gives), not mkstemp's 0600."""
    directory = path.parent if str(path.parent) else Path()
    try:
        handle, temporary = tempfile.mkstemp(dir=directory, prefix=f".{path.name}.", suffix=".tmp")
        try:
            with os.fdopen(handle, "w", encoding="utf-8") as out:
                out.write(text)
                os.fchmod(out.fileno(), 0o666 & ~_umask())
            Path(temporary).replace(path)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
    except OSError as exc:
        stderr_console().print(f"error: --html {path}: {exc.strerror or exc}", highlight=False, markup=False)
        raise typer.Exit(EXIT_INVALID_INPUT) from exc
