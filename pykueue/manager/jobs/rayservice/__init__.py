"""KubeRay RayService (ray.io/v1): the pod sets of the cluster it serves from."""
