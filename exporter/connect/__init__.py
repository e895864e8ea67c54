"""Kafka Connect through its REST API (`--connect-url`): its model, adapter, watcher, collector and
stall verdict (a source connector that moves nothing, beside the source watch's flow).
May import httpx, prometheus-client and `collectors` (its collector is one of them); no wing."""
