"""The DRA CEL environment: the ``device`` variable, Kubernetes' quantity and semver libraries, a compile cache."""
