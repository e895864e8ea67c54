"""The pure model: the cluster snapshot and the state, lag and history derived from it; no I/O.
May import the standard library, `common.kafka_errors` and itself; no client, socket or wing."""
