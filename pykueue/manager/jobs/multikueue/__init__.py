"""MultiKueue's pure parts: per-kind adapters (how a job is copied to a worker and how its
status comes back), the dispatch decisions, and worker kubeconfig validation. The I/O that
applies them is ``manager.runtime.controllers.multikueue``."""
