"""Talking to the chart's install as its ServiceAccounts: calls with a token, TokenRequests, helm with a kubeconfig."""

from __future__ import annotations

import json
import ssl
import subprocess
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from tests.controlplane.fixture import ControlPlane
from tests.helm.chart import helm_run

RELEASE = "kubedra"
NAMESPACE = "kubedra"
POLICY = "kubedra-driver-resourceslices"


def call(plane: ControlPlane, token: str, method: str, path: str, body: Any = None) -> tuple[int, dict[str, Any]]:
    """One API call as ``token``: (HTTP status, the JSON body: the object or the Status of a refusal)."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(plane.server + path, data=data, method=method)
    request.add_header("Authorization", f"Bearer {token}")
    request.add_header("Content-Type", "application/json")
    context = ssl.create_default_context(cafile=str(plane.cert_dir / "apiserver.crt"))
    try:
        with urllib.request.urlopen(request, context=context, timeout=30) as response:
            payload = response.read()
            # A watch answers with one event per line: the first one stands for the stream.
            return response.status, json.loads(payload.split(b"\n", 1)[0] or b"{}")
    except urllib.error.HTTPError as error:
        with error:
            return error.code, json.loads(error.read() or b"{}")


def helm_in(installed_plane: ControlPlane, helm: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return helm_run(helm, *args, "--kubeconfig", str(installed_plane.kubeconfig), check=False)


def token_for(plane: ControlPlane, service_account: str, pod: dict[str, Any] | None = None) -> str:
    spec: dict[str, Any] = {"expirationSeconds": 3600}
    if pod is not None:
        spec["boundObjectRef"] = {"kind": "Pod", "apiVersion": "v1", "name": pod["metadata"]["name"],
                                  "uid": pod["metadata"]["uid"]}
    body = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": spec}
    answer = plane.request("POST", f"/api/v1/namespaces/{NAMESPACE}/serviceaccounts/{service_account}/token", body)
    token: str = answer["status"]["token"]
    return token
