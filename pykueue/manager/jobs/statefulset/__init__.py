"""The StatefulSet integration: admission rules (webhook.py) and its one Workload (lifecycle.py)."""
