"""Scenario files for ``pykueue simulate``: loading, running over the core, reporting."""
