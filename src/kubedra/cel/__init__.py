"""The DRA CEL environment: the ``device`` variable, Kubernetes' quantity and semver libraries, a compile cache.

Entry points: ``CompileCache(options).compile(expr) -> SelectorProgram`` and
``SelectorProgram.evaluate(DeviceView(driver, device)) -> bool``.
"""

from kubedra.cel.cache import CompileCache
from kubedra.cel.cost import COST_LIMIT
from kubedra.cel.device import DeviceView
from kubedra.cel.environment import CelOptions, Environment
from kubedra.cel.errors import CelCompileError, CelError, CelRuntimeError
from kubedra.cel.program import SelectorProgram

__all__ = [
    "COST_LIMIT",
    "CelCompileError",
    "CelError",
    "CelOptions",
    "CelRuntimeError",
    "CompileCache",
    "DeviceView",
    "Environment",
    "SelectorProgram",
]
