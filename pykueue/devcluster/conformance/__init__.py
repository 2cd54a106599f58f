"""``pykueue dev conformance``: run real Kueue and pykueue's core on the same scenarios."""
