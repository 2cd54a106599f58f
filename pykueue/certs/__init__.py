"""Self-signed CA and serving certificates, rotation, caBundle injection."""
