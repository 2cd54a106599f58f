"""The commands of kubectl kueue, one module per group."""
