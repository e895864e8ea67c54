#!/bin/bash
# One-shot topic creation for docker-compose.yml (service kafka-init). Idempotent: --if-not-exists
# makes a re-run (every `docker compose up`) a no-op for topics that already exist. The exporter's
# probe topic is not here: the exporter creates it, with one partition led by each broker. Rejected
# messages go to the ingest job's quarantine Parquet root, not to a topic.
set -euo pipefail
: "${BOOTSTRAP_SERVERS:?BOOTSTRAP_SERVERS is not set}"
: "${MEASURE_TOPIC:=measure}"
: "${MEASURE_PARTITIONS:=6}"
: "${REPLICATION_FACTOR:=3}"
: "${MEASURE_RETENTION_MS:=604800000}"

topics=${KAFKA_TOPICS_SH:-/opt/kafka/bin/kafka-topics.sh}

create() { # name partitions [--config k=v ...]
  local name=$1 partitions=$2
  shift 2
  "$topics" --bootstrap-server "$BOOTSTRAP_SERVERS" --create --if-not-exists \
    --topic "$name" --partitions "$partitions" --replication-factor "$REPLICATION_FACTOR" "$@"
}

create "$MEASURE_TOPIC" "$MEASURE_PARTITIONS" \
  --config min.insync.replicas=2 --config retention.ms="$MEASURE_RETENTION_MS"

"$topics" --bootstrap-server "$BOOTSTRAP_SERVERS" --describe \
  --topic "$MEASURE_TOPIC" || true  # informational only
