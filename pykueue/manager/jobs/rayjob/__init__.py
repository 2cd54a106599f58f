"""KubeRay RayJob (ray.io/v1): the pod sets of its cluster, plus ``submitter`` in K8sJobMode."""
