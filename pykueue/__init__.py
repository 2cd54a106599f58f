"""pykueue: Kubernetes batch queueing in Python, speaking Kueue's API (kueue.x-k8s.io)."""

__version__ = "0.1.0"
