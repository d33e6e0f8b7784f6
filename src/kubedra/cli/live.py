"""Reading a live cluster for a command: connect with the user's kubeconfig, list, or exit 2 saying why."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import typer

from kubedra.cli.output import EXIT_INVALID_INPUT, stderr_console

TIMEOUT_VARIABLE = "KUBEDRA_REQUEST_TIMEOUT"  # kubectl dra's --request-timeout: 30s, 1m, 0 for none
DEFAULT_TIMEOUT = 30.0


def request_timeout(environ: Mapping[str, str]) -> float | None:
    """Seconds one API request may take (None: no limit), from ``$KUBEDRA_REQUEST_TIMEOUT`` as kubectl reads
    ``--request-timeout``: a bare number is seconds, else a Go duration."""
    from kubedra.kube.api import KubeError
    from kubedra.sim.durations import DurationError, parse_duration

    text = environ.get(TIMEOUT_VARIABLE, "").strip()
    if not text:
        return DEFAULT_TIMEOUT
    try:
        seconds = float(text) if text.isdigit() else parse_duration(text)
    except DurationError as exc:
        raise KubeError(f"--request-timeout {text!r}: {exc}") from exc
    if seconds < 0:
        raise KubeError(f"--request-timeout {text!r}: must not be negative")
    return None if seconds == 0 else seconds


def read_live(kubeconfig: str | None, context: str | None) -> Any:
    """The cluster's DRA-relevant objects (``kubedra.kube.read.ClusterDocuments``); notes go to stderr."""
    from kubedra.kube.api import KubeError, connect
    from kubedra.kube.read import read_cluster

    try:
        with connect(kubeconfig, context, timeout=request_timeout(os.environ)) as client:
            documents = read_cluster(client)
    except KubeError as exc:
        stderr_console().print(f"error: {exc}", highlight=False, markup=False)
        raise typer.Exit(EXIT_INVALID_INPUT) from exc
    for note in documents.notes():
        stderr_console().print(f"Note: {note}", highlight=False, markup=False)
    return documents
