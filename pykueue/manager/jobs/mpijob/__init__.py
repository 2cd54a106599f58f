"""The mpijob integration: admission rules (webhook.py) and reconciliation (lifecycle.py)."""
