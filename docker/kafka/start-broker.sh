#!/bin/sh
# Starts the broker with the Prometheus JMX exporter agent.
#
# The agent goes into KAFKA_OPTS here, in the broker's own process only, not in the container's
# environment: every Kafka CLI tool (kafka-topics.sh, the healthcheck's kafka-broker-api-versions.sh,
# `docker compose exec ...`) reads KAFKA_OPTS too, and a second agent on the same port would make
# that JVM abort at start.
set -eu
: "${JMX_EXPORTER_PORT:=9404}"
: "${JMX_EXPORTER_CONFIG:=/opt/jmx-exporter/jmx-kafka.yml}"
if [ ! -r "$JMX_EXPORTER_CONFIG" ]; then
  echo "JMX exporter rules file $JMX_EXPORTER_CONFIG is missing: mount prometheus/jmx-kafka.yml there" >&2
  exit 1
fi
export KAFKA_OPTS="-javaagent:/opt/jmx-exporter/jmx_prometheus_javaagent.jar=${JMX_EXPORTER_PORT}:${JMX_EXPORTER_CONFIG}${KAFKA_OPTS:+ $KAFKA_OPTS}"
exec /etc/kafka/docker/run "$@"
