"""The progress of a run: replicas that arrive together (one instant) are counted as they are bound, and the total
is known before the first pod."""

from __future__ import annotations

from kubedra.objects.load import load_text
from kubedra.sim.run import PROGRESS_EVERY
from kubedra.sim.scenario import build_scenario
from kubedra.sim.simulate import Options, prepare

REPLICAS = 3 * PROGRESS_EVERY + 5
CLUSTER = f"""apiVersion: kubedra.io/v1alpha1
kind: NodePool
metadata: {{name: cpu}}
spec:
  count: 4
  allocatable: {{cpu: "1000", memory: 4000Gi, pods: "1000"}}
---
apiVersion: apps/v1
kind: Deployment
metadata: {{name: web}}
spec:
  replicas: {REPLICAS}
  selector: {{matchLabels: {{app: web}}}}
  template:
    metadata: {{labels: {{app: web}}}}
    spec:
      containers: [{{name: c, image: x, resources: {{requests: {{cpu: 100m}}}}}}]
"""


def test_replicas_arriving_together_are_counted_as_they_are_bound() -> None:
    calls: list[tuple[int, int]] = []
    prepare(build_scenario(load_text(CLUSTER)), Options()).run(lambda done, total: calls.append((done, total)))
    assert calls[0] == (0, REPLICAS)  # the total before the first pod: never "0/?"
    assert [done for done, _ in calls] == [0, *range(PROGRESS_EVERY, REPLICAS, PROGRESS_EVERY), REPLICAS]
    assert {total for _, total in calls} == {REPLICAS}
