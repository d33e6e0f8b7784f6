"""Monitoring: metric families of a cluster state (pure, incremental), their exposition and the sources.

``model`` computes the families from a ``ClusterState``; ``available`` asks the structured allocator what is free;
``serve`` is the prometheus-client registry and the HTTP edge; ``embedded`` serves a simulation, ``live`` a cluster.
"""
