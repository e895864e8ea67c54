"""The only Kafka I/O: the cluster adapter, record times, the topic's tail and the clients' glue.
May import the model, `common` and the Kafka clients (confluent-kafka, kafka-python); no wing."""
