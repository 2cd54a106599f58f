"""Unit tests of the manager runtime I/O infrastructure (no cluster needed)."""
