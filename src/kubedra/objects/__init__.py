"""Kubernetes objects in and out: loading, the v1 model, conversions, quantities, semvers, limits."""
