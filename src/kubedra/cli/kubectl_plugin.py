"""``kubectl dra``: kubedra as a kubectl plugin, speaking kubectl's flags and reading the current cluster by default.

kubectl runs ``kubectl-dra`` (found on ``$PATH``) with the words after ``dra`` and its own environment. This module
turns kubectl's conventions into kubedra's command line and runs it:

* ``--kubeconfig``, ``--context`` and ``$KUBECONFIG`` (several files merged) choose the cluster as kubectl does;
  ``explain``, ``simulate``, ``snapshot`` and ``validate`` read that live cluster without being told (``-f`` files
  are applied on top of it, as a what-if; ``validate`` resolves the files' references in it);
* ``-n/--namespace`` defaults to the context's namespace (``default`` without one), as ``kubectl get``;
  ``-A/--all-namespaces`` looks in every namespace;
* ``--request-timeout`` (``30s``, ``1m``; ``0`` for none) bounds each API request.

``kubectl_complete-dra`` answers kubectl's plugin completion (``kubectl dra <TAB>``): the commands, the kinds
``explain`` takes, the flags, and for ``explain pod`` the live pods' names.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from kubedra.cli.live import TIMEOUT_VARIABLE
from kubedra.cli.output import EXIT_INVALID_INPUT

LIVE = ("explain", "simulate", "snapshot", "validate")
COMMANDS = (*LIVE, "migrate", "convert", "allocate", "cel", "plan", "trace")
VALUE_FLAGS = {"-n": "namespace", "--namespace": "namespace", "--context": "context", "--kubeconfig": "kubeconfig",
               "--request-timeout": "request_timeout"}
ALL_NAMESPACES = ("-A", "--all-namespaces")

USAGE = """\
kubectl dra: Kubernetes DRA for GPUs, on the cluster kubectl talks to (kubedra as a kubectl plugin).

Usage:
  kubectl dra explain KIND NAME [-n NAMESPACE | -A]   why a pod is pending, where it runs, what would make it fit
  kubectl dra simulate [-f CHANGES.yaml ...]          a what-if on the live cluster's state (nothing is written)
  kubectl dra snapshot [--output-dir DIR]             the cluster's DRA objects as files simulate reads
  kubectl dra validate -f FILE ...                    what the API server would reject; references looked up in
                                                      the cluster too
  kubectl dra migrate|convert|allocate ...            the file commands, as kubedra runs them

kubectl's flags, anywhere on the line:
  -n, --namespace NAME      the namespace (default: the context's, else "default")
  -A, --all-namespaces      every namespace
      --context NAME        the kubeconfig context (default: the current one)
      --kubeconfig FILE     the kubeconfig (default: $KUBECONFIG, its files merged, else ~/.kube/config)
      --request-timeout D   the longest one API request may take (30s, 1m; 0: no limit)

KIND is pod, claim, deployment, statefulset, replicaset, daemonset or job.
Run "kubectl dra COMMAND -h" for a command's own flags and examples.

Examples:
  kubectl dra explain pod trainer-0 -n ml
  kubectl dra explain deployment llm-inference
  kubectl dra simulate -f more-replicas.yaml
  kubectl dra snapshot --output-dir cluster/
"""


class UsageError(Exception):
    """kubectl-style flags that cannot be turned into a kubedra command line."""


@dataclass
class Parsed:
    words: list[str] = field(default_factory=list)  # the command line without kubectl's own flags
    namespace: str | None = None
    context: str | None = None
    kubeconfig: str | None = None
    request_timeout: str | None = None
    all_namespaces: bool = False


def parse(argv: Sequence[str]) -> Parsed:
    """Pull kubectl's flags out of ``argv`` wherever they stand (``--flag=value`` too); words after ``--`` stay."""
    out = Parsed()
    rest = list(argv)
    i = 0
    while i < len(rest):
        word = rest[i]
        if word == "--":
            out.words.extend(rest[i:])
            break
        name, eq, value = word.partition("=")
        if name in VALUE_FLAGS:
            if not eq:
                if i + 1 >= len(rest):
                    raise UsageError(f"flag needs an argument: {name}")
                value = rest[i + 1]
                i += 1
            setattr(out, VALUE_FLAGS[name], value)
        elif word in ALL_NAMESPACES:
            out.all_namespaces = True
        else:
            out.words.append(word)
        i += 1
    if out.all_namespaces and out.namespace is not None:
        raise UsageError("a resource cannot be retrieved by name across all namespaces: give -n or -A, not both")
    return out


def _context_namespace(parsed: Parsed, environ: Mapping[str, str]) -> tuple[str | None, str]:
    """The context to read (the current one when none is named) and its namespace, from the merged kubeconfig."""
    from kubedra.kube import kubeconfig as kc

    found = kc.load(parsed.kubeconfig, environ)
    config = found.config or {}
    context = parsed.context or config.get("current-context") or None
    namespace = "default"
    for entry in config.get("contexts") or []:
        if entry.get("name") == context:
            namespace = (entry.get("context") or {}).get("namespace") or "default"
    return context, namespace


def translate(argv: Sequence[str], environ: Mapping[str, str]) -> tuple[list[str], dict[str, str]]:
    """kubedra's argv for a ``kubectl dra`` command line, and the environment variables to set."""
    parsed = parse(argv)
    if not parsed.words or parsed.words[0] in ("-h", "--help", "help"):
        return ["--kubectl-dra-usage"], {}
    command = parsed.words[0]
    env: dict[str, str] = {}
    if parsed.request_timeout is not None:
        env[TIMEOUT_VARIABLE] = parsed.request_timeout
    if command not in LIVE:
        if parsed.namespace or parsed.all_namespaces or parsed.context or parsed.kubeconfig:
            raise UsageError(f"kubectl dra {command} reads files, not the cluster: -n, -A, --context and "
                             "--kubeconfig do not apply")
        return parsed.words, env
    out = list(parsed.words)
    if "-h" in out or "--help" in out:
        return out, env
    context, namespace = _context_namespace(parsed, environ)
    if parsed.kubeconfig:
        out += ["--kubeconfig", parsed.kubeconfig]
    if context:
        out += ["--context", context]
    elif not parsed.kubeconfig:
        raise UsageError("no kubeconfig context: give --kubeconfig FILE or --context NAME, or set $KUBECONFIG "
                         "(kubectl dra reads the cluster kubectl talks to)")
    if command == "explain":
        if not parsed.all_namespaces:
            out += ["-n", parsed.namespace or namespace]
    elif parsed.namespace is not None:
        raise UsageError(f"kubectl dra {command} covers every namespace: leave out -n (or give -A)")
    return out, env


def entrypoint() -> None:
    """The ``kubectl-dra`` console script."""
    from kubedra.cli import main
    from kubedra.kube.api import KubeError

    try:
        argv, env = translate(sys.argv[1:], os.environ)
    except (UsageError, KubeError) as exc:
        sys.stderr.write(f"error: {exc}\n")
        sys.exit(EXIT_INVALID_INPUT)
    if argv == ["--kubectl-dra-usage"]:
        sys.stdout.write(USAGE)
        sys.exit(0)
    os.environ.update(env)
    sys.exit(main(argv))


def completions(args: Sequence[str]) -> tuple[list[str], int]:
    """Candidates for the last of ``args`` (the word being typed) and cobra's directive (4: no file names)."""
    *before, typed = list(args) or [""]
    no_files = 4
    if before and before[-1] in VALUE_FLAGS:
        if before[-1] == "--context":
            return [c for c in _contexts() if c.startswith(typed)], no_files
        if before[-1] in ("-n", "--namespace"):
            return [], no_files
        return [], 0  # a file or a duration: the shell's own completion
    try:
        parsed = parse(before)
    except UsageError:
        return [], no_files
    words = [w for w in parsed.words if not w.startswith("-")]
    if typed.startswith("-"):
        flags = [*VALUE_FLAGS, *ALL_NAMESPACES, "-f", "--filename", "-o", "--output", "-h", "--help"]
        return sorted(f for f in dict.fromkeys(flags) if f.startswith(typed)), no_files
    if not words:
        return [c for c in COMMANDS if c.startswith(typed)], no_files
    if words[0] == "explain" and len(words) == 1:
        from kubedra.cli.explain import KIND_NAMES

        return [k for k in KIND_NAMES if k.startswith(typed)], no_files
    if words[0] == "explain" and len(words) == 2 and words[1] in ("pod", "pods", "po"):
        return _live_pods(parsed, typed), no_files
    return [], no_files


def _contexts() -> list[str]:
    from kubedra.kube import kubeconfig as kc
    from kubedra.kube.api import KubeError

    try:
        config = kc.load(None).config or {}
    except KubeError:
        return []
    return [str(c.get("name")) for c in config.get("contexts") or [] if c.get("name")]


def _live_pods(parsed: Parsed, typed: str) -> list[str]:
    """Names of the pods in the namespace the command would use; none when the cluster cannot be read."""
    from lightkube.resources.core_v1 import Pod

    from kubedra.kube.api import READ_ERRORS, KubeError, connect

    unreadable: tuple[type[Exception], ...] = (KubeError, *READ_ERRORS)
    try:
        context, namespace = _context_namespace(parsed, os.environ)
        with connect(parsed.kubeconfig, context, timeout=5.0) as client:
            names = [p.metadata.name for p in client.list(Pod, namespace=parsed.namespace or namespace)
                     if p.metadata is not None and p.metadata.name]
    except unreadable:
        return []
    return sorted(n for n in names if n.startswith(typed))


def complete_entrypoint() -> None:
    """The ``kubectl_complete-dra`` console script (kubectl's plugin completion protocol)."""
    candidates, directive = completions(sys.argv[1:])
    sys.stdout.write("".join(f"{c}\n" for c in candidates) + f":{directive}\n")
