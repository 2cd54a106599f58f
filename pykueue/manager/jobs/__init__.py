"""One module per job integration (batch Job, PyTorchJob, LeaderWorkerSet, pods)."""
