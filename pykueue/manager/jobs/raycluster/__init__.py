"""KubeRay RayCluster (ray.io/v1): pod sets ``head`` and one per worker group; the rules the
three KubeRay kinds share (common.py)."""
