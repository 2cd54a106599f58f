"""TrainJob (trainer.kubeflow.org/v1alpha1): the pod sets of the JobSet its training runtime makes."""
