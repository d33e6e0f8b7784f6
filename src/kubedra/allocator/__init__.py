"""The structured allocator: the device decisions kube-scheduler makes, as a pure library."""
