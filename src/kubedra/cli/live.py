"""Reading a live cluster for a command: connect with the user's kubeconfig, list, or exit 2 saying why."""

from __future__ import annotations

from typing import Any

import typer

from kubedra.cli.output import EXIT_INVALID_INPUT, stderr_console


def read_live(kubeconfig: str | None, context: str | None) -> Any:
    """The cluster's DRA-relevant objects (``kubedra.kube.read.ClusterDocuments``); notes go to stderr."""
    from kubedra.kube.api import KubeError, connect
    from kubedra.kube.read import read_cluster

    try:
        with connect(kubeconfig, context) as client:
            documents = read_cluster(client)
    except KubeError as exc:
        stderr_console().print(f"error: {exc}", highlight=False, markup=False)
        raise typer.Exit(EXIT_INVALID_INPUT) from exc
    for note in documents.notes():
        stderr_console().print(f"Note: {note}", highlight=False, markup=False)
    return documents
