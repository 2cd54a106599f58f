"""A local control plane of real Kubernetes binaries built from Go modules."""
