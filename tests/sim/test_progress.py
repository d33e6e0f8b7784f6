"""The progress callback: its total is known before the first pod and the count never passes it."""

from __future__ import annotations

from fixtures.scenarios import claim_template, controller, job, nodepool, text_of

from kubedra.objects.load import load_text
from kubedra.sim.run import PROGRESS_EVERY
from kubedra.sim.scenario import build_scenario
from kubedra.sim.simulate import Options, prepare


def test_job_pods_created_later_are_in_the_total_from_the_start() -> None:
    documents = (
        nodepool("gpu", gpus=1),
        claim_template("one-gpu"),
        job("train", parallelism=1, completions=4, run_for="1h", template="one-gpu"),
        controller("Deployment", "web", 2, template="one-gpu", start_after="10h"),
    )
    simulation = prepare(build_scenario(load_text(text_of(*documents)), seed=0), Options())
    calls: list[tuple[int, int]] = []
    simulation.run(lambda done, total: calls.append((done, total)))
    assert {total for _, total in calls} == {6}  # 4 Job pods (3 created as earlier ones succeed) + 2 replicas
    assert all(done <= total for done, total in calls)
    assert calls[-1][0] == 5  # the Job's 4 and one replica: the second replica never fits

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
