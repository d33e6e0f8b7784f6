"""The embedded source: ``/metrics`` of a simulated cluster, at the end of the run or live while it runs.

The simulation and the scrapes share one lock: a scrape sees the state between two instants of simulated time,
never in the middle of one. With ``speed`` the run is paced (simulated seconds per wall second) and releases the
lock while it waits, so scrapes see time advance; without it the run goes flat out and the final state is served.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from kubedra.allocator import Features
from kubedra.cluster.state import ClusterState
from kubedra.metrics.families import Family, FamilySpec, render_families
from kubedra.metrics.model import DraMetrics
from kubedra.sim.run import Simulation, SimulationResult

SIM_TIME = FamilySpec(
    "kubedra_simulation_time_seconds", "Simulated time of the state served, in seconds from the start.", ()
)
# The report's fragmentation (sim.fragmentation), per node pool and GPU model, at the instant served.
_POOL = ("pool", "model")
FRAGMENTATION = (
    (FamilySpec("kubedra_simulation_gpus_free", "GPUs nothing is allocated on.", _POOL), "free"),
    (FamilySpec("kubedra_simulation_gpus_usable", "Free GPUs on nodes where the claims of a pending pod could be "
                "allocated now (the allocator's answer).", _POOL), "usable"),
    (FamilySpec("kubedra_simulation_gpus_stranded", "Free GPUs no pending pod's claims can use (0 while nothing "
                "waits).", _POOL), "stranded"),
    (FamilySpec("kubedra_simulation_gpus_mig_partly_used", "MIG-capable GPUs whose memory slices are partly held.",
                _POOL), "migPartlyUsed"),
    (FamilySpec("kubedra_simulation_shares_left", "Consumable shares not consumed on partly shared GPUs.", _POOL),
     "sharesLeft"),
    (FamilySpec("kubedra_simulation_fragmentation_gpus", "The FGD paper's fragmentation measure (Weng et al., "
                "ATC'23) in GPUs, for the run's distribution of pod shapes.", _POOL), "fgd"),
)
PENDING = FamilySpec("kubedra_simulation_pods_pending", "Pods that have arrived and wait to be scheduled.", ())


class StateSource:
    """Families of a cluster state that another thread mutates under ``lock``."""

    def __init__(
        self,
        state: ClusterState,
        features: Features,
        lock: threading.Lock,
        clock: Callable[[], float] = lambda: 0.0,
        fragmentation: Callable[[], dict[str, Any]] | None = None,
    ) -> None:
        """``fragmentation``: the report's fragmentation of the state now (``Simulation.fragmentation_now``)."""
        self.state = state
        self.lock = lock
        self.clock = clock
        self.fragmentation = fragmentation
        self.model = DraMetrics(features)

    def _extra(self) -> list[Family]:
        families = [Family(SIM_TIME, [((), self.clock())])]
        if self.fragmentation is not None:
            figures = self.fragmentation()
            for spec, key in FRAGMENTATION:
                families.append(Family(spec, [((row["pool"], row["model"]), row[key]) for row in figures["pools"]]))
            families.append(Family(PENDING, [((), figures["pendingPods"])]))
        return families

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
