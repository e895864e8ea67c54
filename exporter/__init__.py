"""vigia-exporter: Kafka cluster state, lag, the probe and the pipeline's source → Prometheus.
The top level wires it (cli, config, service); each folder imports only those below (make lint)."""
