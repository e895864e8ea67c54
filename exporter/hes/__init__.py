"""The HES, the pipeline's source: its database adapter, and the watch that reads it on a schedule.
May import the model, `common`, PyMySQL and `exporter.kafka` (the watch reads the topic's tail)."""
