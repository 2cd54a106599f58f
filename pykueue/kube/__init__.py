"""The platform: the only door to Kubernetes (API client, informers, work queues, leader election,
rate limits, endpoints, Events)."""
