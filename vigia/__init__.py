"""Vigía: monitoring for a Kafka + Spark smart-meter ingestion pipeline."""
