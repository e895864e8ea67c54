"""End-to-end probe: produce to a probe topic led by every broker, consume it back, time it all.
May import `common`, confluent-kafka and prometheus-client; nothing else of the exporter.

- `planner.plan_probe_topic` (pure): CreateTopics / CreatePartitions actions for the probe topic;
  `planner.coverage` / `planner.preferred_elections` (pure): which brokers lead a probe partition,
  which partitions to hand back to their preferred leader after a restart.
- `tracker.LatencyTracker` (pure): produce latency per broker and acks, replication estimate,
  round trip, outcomes (ok / failed / lost) → `ProbeStats`.
- `runner.ProbeRunner` (confluent-kafka adapter): topic upkeep and the background threads.
- `collector.ProbeCollector`: the `vigia_probe_*` families, rebuilt from `ProbeStats` per scrape.

Wiring (the exporter's `CollectionService` starts and stops the runner; its app renders the
collector's families at each scrape, see `exporter.collectors.render_probe`)::

    runner = ProbeRunner(kafka_config, ProbeSettings(enabled=..., topic=..., interval_seconds=...))
    registry.register(ProbeCollector(runner.stats, lambda: runner.status))
    runner.start()      # at startup; never blocks, never raises on Kafka errors
    runner.stop()       # at shutdown
"""
