"""The real stack for tests: a 3-node KRaft Kafka cluster, a Kafka Connect worker with Debezium and
a MariaDB HES, started by the test run itself from the distributions named in
VIGIA_TEST_KAFKA_HOME and VIGIA_TEST_CONNECT_HOME (plugin.py has the fixtures; docs/development.md
the conventions)."""
