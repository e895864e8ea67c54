"""`vigia-simulate`: a stand-in for the HES, producing smart-meter measures to Kafka."""
