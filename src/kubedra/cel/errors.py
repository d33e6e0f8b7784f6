"""Errors of the CEL environment; ``str(e)`` is the message a user sees, worded like Kubernetes'."""

from __future__ import annotations


class CelError(Exception):
    """Base of every CEL error."""


class CelCompileError(CelError):
    """The expression does not compile (syntax, types, result not bool, too long)."""


class CelRuntimeError(CelError):
    """Evaluating a compiled selector against one device failed (missing key, bad value, cost limit)."""
