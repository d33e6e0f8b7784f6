"""``kubedra driver``: a DRA kubelet plugin for NVIDIA GPUs, NVIDIA's driver's names and wire contract.

An adapter room (gRPC over unix sockets, files, NVML, the API server through :mod:`kubedra.kube`). The pure parts —
devices built from an inventory (:mod:`.devices`), what a claim asks of this node (:mod:`.claims`), CDI specs
(:mod:`.cdi`), the checkpoint format (:mod:`.checkpoint`), sharing commands (:mod:`.sharing`) — do no I/O and are
tested on their own; the core rooms never import this package.
"""
