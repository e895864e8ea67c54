"""Kafka Connect, watched through its REST API (`--connect-url`): model, adapter, watcher,
collector and the `/api/v1/cluster` section."""
