"""JobSet (jobset.x-k8s.io/v1alpha2): one pod set per replicated job."""
