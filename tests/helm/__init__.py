"""The Helm chart deploy/helm/kubedra, rendered, linted and installed with the real Helm (built by build.sh)."""
