"""Kafka Connect through its REST API (`--connect-url`): its model, adapter, watcher and collector.
May import httpx, prometheus-client and `collectors` (its collector is one of them); no wing."""
