"""The embedded source: ``/metrics`` of a simulated cluster, at the end of the run or live while it runs.

The simulation and the scrapes share one lock: a scrape sees the state between two instants of simulated time,
never in the middle of one. With ``speed`` the run is paced (simulated seconds per wall second) and releases the
lock while it waits, so scrapes see time advance; without it the run goes flat out and the final state is served.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from kubedra.allocator import Features
from kubedra.cluster.state import ClusterState
from kubedra.metrics.model import DraMetrics, Family, FamilySpec, render_families
from kubedra.sim.run import Simulation, SimulationResult

SIM_TIME = FamilySpec(
    "kubedra_simulation_time_seconds", "Simulated time of the state served, in seconds from the start.", ()
)


class StateSource:
    """Families of a cluster state that another thread mutates under ``lock``."""

    def __init__(
        self,
        state: ClusterState,
        features: Features,
        lock: threading.Lock,
        clock: Callable[[], float] = lambda: 0.0,
    ) -> None:
        self.state = state
        self.lock = lock
        self.clock = clock
        self.model = DraMetrics(features)

    def _extra(self) -> list[Family]:
        return [Family(SIM_TIME, [((), self.clock())])]

    def families(self) -> list[Family]:
        with self.lock:
            self.model.update(self.state)
            return [*self.model.families(), *self._extra()]

    def text(self) -> str:
        with self.lock:
            self.model.update(self.state)
            return self.model.render() + render_families(self._extra())


def run_paced(
    simulation: Simulation,
    lock: threading.Lock,
    speed: float | None,
    sleep: Callable[[float], None] = time.sleep,
    monotonic: Callable[[], float] = time.monotonic,
) -> SimulationResult:
    """Run the simulation holding ``lock`` except while waiting for the wall clock to catch up with ``speed``."""
    start = monotonic()

    def pace(_done: int, _total: int) -> None:
        upcoming = simulation.next_time
        if speed is None or upcoming is None:
            return
        lock.release()
        try:
            delay = start + upcoming / speed - monotonic()
            if delay > 0:
                sleep(delay)
        finally:
            lock.acquire()

    with lock:
        return simulation.run(pace)
