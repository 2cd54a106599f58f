"""Typed models of the kueue.x-k8s.io API and of the Kubernetes objects pykueue reads."""
