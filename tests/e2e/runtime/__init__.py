"""End-to-end tests of the manager runtime against the local control plane."""
