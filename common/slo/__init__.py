"""SLOs as configuration: OpenSLO documents in, Prometheus recording and alerting rules out."""
