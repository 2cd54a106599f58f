"""Benchmarks; each prints one JSON line last (see the design contract)."""
