"""I/O: informers, reconcilers, status writers, leader election, metrics, visibility."""
