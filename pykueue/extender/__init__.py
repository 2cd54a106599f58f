"""The kube-scheduler extender enforcing Topology Aware Scheduling assignments."""
