"""Fields kube-scheduler reads that kubedra does not model yet are said, in simulate and validate (issue 38: "said,
never silent"). Explicit topologySpreadConstraints are modelled: neither command says anything of them. A pod's
persistentVolumeClaim and ephemeral volumes are not (VolumeBinding, VolumeZone, VolumeRestrictions, NodeVolumeLimits):
the model keeps just those volumes, and both commands name the pods that have them."""

from __future__ import annotations

from pathlib import Path

import pytest
from fixtures.scenarios import nodepool, pod, text_of

from kubedra.cli import main
from kubedra.objects.load import load_text
from kubedra.objects.model import Pod, to_dict
from kubedra.sim.scenario import build_scenario
from kubedra.sim.unmodelled import unmodelled_fields

SPREAD = [{"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "DoNotSchedule",
           "labelSelector": {"matchLabels": {"app": "a"}}}]
PVC = [{"name": "data", "persistentVolumeClaim": {"claimName": "data"}}]


def test_explicit_spread_constraints_are_modelled_so_no_note() -> None:
    notes = build_scenario(load_text(text_of(
        nodepool("n", gpus=None),
        pod("a", requests={"cpu": "1"}, topologySpreadConstraints=SPREAD),
        pod("b", requests={"cpu": "1"}, topologySpreadConstraints=SPREAD, volumes=PVC),
    ))).notes
    assert not any("topologySpreadConstraints" in note for note in notes)


def test_each_unmodelled_field_is_named_once_with_its_pods() -> None:
    pods = load_text(text_of(pod("a", requests={"cpu": "1"}), pod("b", requests={"cpu": "1"}),
                             pod("c", requests={"cpu": "1"}, topologySpreadConstraints=SPREAD))).of_kind(Pod)
    fields = [("spec.someField", "filters them with SomePlugin", lambda p: not p.spec.topology_spread_constraints)]
    assert unmodelled_fields(pods, fields) == [
        "2 pods (e.g. Pod default/a) set spec.someField, which kubedra does not read yet: kube-scheduler filters them "
        "with SomePlugin; kubedra places them as if they had none, so their placements may differ from "
        "kube-scheduler's",
    ]


def test_validate_says_nothing_of_spread_constraints(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "in.yaml"
    path.write_text(text_of(nodepool("n", gpus=None), pod("a", requests={"cpu": "1"}, topologySpreadConstraints=SPREAD)))
    assert main(["validate", "-f", str(path)]) == 0
    assert "topologySpreadConstraints" not in capsys.readouterr().out


VOLUMES_NOTE = (
    "set persistentVolumeClaim or ephemeral volumes (spec.volumes), which kubedra does not read yet: kube-scheduler "
    "filters them with VolumeBinding, VolumeZone, VolumeRestrictions and NodeVolumeLimits (a bound PersistentVolume's "
    "node affinity and zone, WaitForFirstConsumer binding, ReadWriteOncePod, CSI attach limits); kubedra places them "
    "as if they had none, so their placements may differ from kube-scheduler's"
)
EPHEMERAL = {"name": "scratch", "ephemeral": {"volumeClaimTemplate": {
    "metadata": {"labels": {"team": "ml"}},
    "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "gp3", "resources": {"requests": {"storage": 200}}},
}}}
OTHER_VOLUMES = [
    {"name": "kube-api-access-x7k2p", "projected": {"sources": [{"serviceAccountToken": {"path": "token"}}]}},
    {"name": "config", "configMap": {"name": "train-config"}},
    {"name": "dshm", "emptyDir": {"medium": "Memory"}},
]


def test_the_model_keeps_only_a_pods_claim_volumes() -> None:
    pods = load_text(text_of(
        pod("a", volumes=[OTHER_VOLUMES[0], *PVC, OTHER_VOLUMES[1], EPHEMERAL, OTHER_VOLUMES[2]]),
        pod("b", volumes=OTHER_VOLUMES),
        pod("c"),
    )).of_kind(Pod)
    volumes = pods[0].spec.volumes
    assert volumes is not None
    assert [v.name for v in volumes] == ["data", "scratch"]
    assert volumes[0].persistent_volume_claim is not None and volumes[0].persistent_volume_claim.claim_name == "data"
    assert pods[1].spec.volumes is None and pods[2].spec.volumes is None  # nothing kept per pod without them
    # Written back, each is a volume the API server takes (an ephemeral template's spec kept: storage is required).
    assert to_dict(pods[0])["spec"]["volumes"] == [
        {"name": "data", "persistentVolumeClaim": {"claimName": "data"}},
        {"name": "scratch", "ephemeral": {"volumeClaimTemplate": {"spec": {
            "accessModes": ["ReadWriteOnce"], "storageClassName": "gp3", "resources": {"requests": {"storage": "200"}},
        }}}},
    ]
    assert "volumes" not in to_dict(pods[1])["spec"]


def test_pods_with_claim_volumes_are_named_once() -> None:
    notes = build_scenario(load_text(text_of(
        nodepool("n", gpus=None),
        pod("a", requests={"cpu": "1"}, volumes=OTHER_VOLUMES),
        pod("b", "ml", requests={"cpu": "1"}, volumes=[*OTHER_VOLUMES, *PVC]),
        pod("c", requests={"cpu": "1"}, volumes=[EPHEMERAL]),
    ))).notes
    assert [note for note in notes if "volumes" in note] == [f"2 pods (e.g. Pod ml/b) {VOLUMES_NOTE}"]
    assert not any("volumes" in note for note in build_scenario(load_text(text_of(
        nodepool("n", gpus=None), pod("a", requests={"cpu": "1"}, volumes=OTHER_VOLUMES)))).notes)


# A distributed PyTorch training Job as users write it: its dataset on a shared claim, checkpoints on a claim of its
# own per pod (a generic ephemeral volume), /dev/shm in memory.
TRAINING = """\
apiVersion: kubedra.io/v1alpha1
kind: NodePool
metadata: {name: h100}
spec:
  count: 2
  allocatable: {cpu: 192, memory: 2048Gi, pods: 110}
  gpu: {model: H100-80GB, count: 8}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: imagenet, namespace: ml}
spec:
  accessModes: [ReadOnlyMany]
  storageClassName: fsx
  resources: {requests: {storage: 2Ti}}
---
apiVersion: batch/v1
kind: Job
metadata: {name: resnet-ddp, namespace: ml}
spec:
  completions: 4
  parallelism: 4
  completionMode: Indexed
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: pytorch
        image: pytorch/pytorch:2.5.1-cuda12.4-cudnn9-runtime
        command: [torchrun, --nproc_per_node=4, train.py, --data=/data]
        resources:
          limits: {nvidia.com/gpu: 4}
        volumeMounts:
        - {name: dataset, mountPath: /data, readOnly: true}
        - {name: checkpoints, mountPath: /ckpt}
        - {name: dshm, mountPath: /dev/shm}
      volumes:
      - name: dataset
        persistentVolumeClaim: {claimName: imagenet, readOnly: true}
      - name: checkpoints
        ephemeral:
          volumeClaimTemplate:
            spec:
              accessModes: [ReadWriteOnce]
              storageClassName: gp3
              resources: {requests: {storage: 200Gi}}
      - name: dshm
        emptyDir: {medium: Memory, sizeLimit: 64Gi}
"""


def test_simulate_names_a_training_jobs_pods_with_a_dataset_claim(
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    path = tmp_path / "train.yaml"
    path.write_text(TRAINING)
    assert main(["simulate", "-f", str(path)]) == 0
    out, err = capsys.readouterr()
    assert out.count("Running") == 4  # placed as if the volumes were not there, and said so once
    notes = [line for line in err.splitlines() if "spec.volumes" in line]
    assert len(notes) == 1
    assert notes[0].startswith("Note: 4 pods (e.g. Pod ml/resnet-ddp-0-")
    assert notes[0].endswith(VOLUMES_NOTE)
    assert main(["simulate", "-q", "-f", str(path)]) == 0
    assert "spec.volumes" not in capsys.readouterr().err


def test_validate_warns_of_a_training_jobs_claim_volumes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "train.yaml"
    path.write_text(TRAINING)
    assert main(["validate", "-f", str(path)]) == 0
    out = capsys.readouterr().out
    warnings = [line for line in out.splitlines() if "spec.volumes" in line]
    assert len(warnings) == 1
    assert warnings[0].startswith(f"warning: {path}: 4 pods (e.g. Pod ml/resnet-ddp-0-")
    assert warnings[0].endswith(VOLUMES_NOTE)
    assert "valid, 1 warning" in out
