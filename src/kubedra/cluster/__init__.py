"""The cluster as data: nodes, slices, classes, claims, pods, with incremental indexes; inventory generation."""
