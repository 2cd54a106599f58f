"""The tfjob integration (kind.py): a training operator kind, run as every one is
(``manager.jobs.kubeflow_v1``)."""
