"""The Deployment integration: admission rules (webhook.py); its pods run as plain pods."""
