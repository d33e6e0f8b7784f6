"""kubedra: Kubernetes Dynamic Resource Allocation for GPUs.

The public API is what ``__all__`` lists; everything else is private to the package.
"""

from kubedra.objects.errors import ConversionWarning, InvalidInputError, KubedraError, Problem

__all__ = [
    "ConversionWarning",
    "InvalidInputError",
    "KubedraError",
    "Problem",
    "__version__",
]

__version__ = "0.1.0"
