"""The Kubernetes API adapter: the only room that talks to an API server.

It reads (never writes) the objects kubedra models — Nodes, Pods and the resource.k8s.io kinds — with lightkube, and
hands them on as plain documents (dicts shaped like the API's JSON), which ``kubedra.objects.load`` turns into the
one model through the same decoding and beta conversion as files. The core never imports this package.
"""
