#!/bin/sh
# One-shot for docker-compose.yml (service connect-init): registers connector hes-measure from
# its JSON file with PUT /connectors/hes-measure/config, which creates it or updates it in place,
# so re-running (every `docker compose up`) is harmless. Waits for the worker's REST API first.
set -eu
: "${CONNECT_URL:=http://connect:8083}"
: "${CONNECTOR_NAME:=hes-measure}"
: "${CONNECTOR_CONFIG:=/etc/vigia/connector-hes-measure.json}"
: "${WAIT_SECONDS:=180}"

waited=0
until curl -fsS -o /dev/null "$CONNECT_URL/connectors"; do
  waited=$((waited + 2))
  if [ "$waited" -ge "$WAIT_SECONDS" ]; then
    echo "Kafka Connect at $CONNECT_URL did not answer within ${WAIT_SECONDS}s" >&2
    exit 1
  fi
  sleep 2
done

status=$(curl -sS -o /tmp/answer.json -w '%{http_code}' -X PUT \
  -H 'Content-Type: application/json' --data @"$CONNECTOR_CONFIG" \
  "$CONNECT_URL/connectors/$CONNECTOR_NAME/config")
case "$status" in
  200|201) echo "connector $CONNECTOR_NAME registered (HTTP $status)" ;;
  *) echo "registering $CONNECTOR_NAME failed with HTTP $status: $(cat /tmp/answer.json)" >&2; exit 1 ;;
esac
