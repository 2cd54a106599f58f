"""The batchjob integration: admission rules (webhook.py) and reconciliation (lifecycle.py)."""
