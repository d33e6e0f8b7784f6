"""NodePorts as v1.37.2 reads host ports (``GetHostPorts``, ``HostPortInfo.CheckConflict``); the whole filter is
compared with the real kube-scheduler in tests/kube/scenarios/host-ports (issue 38: kubedra had put two pods asking
``hostPort: 8080`` on one node)."""

from __future__ import annotations

from typing import Any

import msgspec

from kubedra.cluster.usage import host_ports, ports_conflict
from kubedra.objects.model import Pod


def pod(containers: list[dict[str, Any]], init: list[dict[str, Any]] | None = None) -> Pod:
    return msgspec.convert({"metadata": {"name": "p"}, "spec": {"containers": containers,
                                                                "initContainers": init or []}}, Pod)


def test_host_ports_of_containers_and_sidecars_only_with_defaults() -> None:
    p = pod([{"name": "a", "ports": [{"containerPort": 80, "hostPort": 8080}, {"containerPort": 81},
                                      {"containerPort": 53, "hostPort": 53, "protocol": "UDP", "hostIP": "10.0.0.1"}]}],
            init=[{"name": "side", "restartPolicy": "Always", "ports": [{"containerPort": 9, "hostPort": 9000}]},
                  {"name": "setup", "ports": [{"containerPort": 7, "hostPort": 7000}]}])
    assert host_ports(p) == (("0.0.0.0", "TCP", 9000), ("0.0.0.0", "TCP", 8080), ("10.0.0.1", "UDP", 53))


def test_conflicts_as_check_conflict_decides() -> None:
    used = {("10.0.0.1", "TCP", 80): 1}
    assert ports_conflict((("0.0.0.0", "TCP", 80),), used)  # all IPs meets any IP's port
    assert ports_conflict((("10.0.0.1", "TCP", 80),), used)
    assert not ports_conflict((("10.0.0.2", "TCP", 80),), used)  # another IP
    assert not ports_conflict((("0.0.0.0", "UDP", 80),), used)  # another protocol
    assert ports_conflict((("10.0.0.2", "TCP", 443),), {("0.0.0.0", "TCP", 443): 1})  # held on all IPs
