-- hes.measure, as common/hes.py creates it (tests/deploy checks they are the same).
CREATE TABLE IF NOT EXISTS measure (
  meter varchar(16) NOT NULL,
  measure_date date NOT NULL,
  period int NOT NULL,
  magnitude varchar(8) NOT NULL,
  value double NOT NULL,
  ts datetime NOT NULL,
  PRIMARY KEY (meter, measure_date, period, magnitude),
  KEY measure_ts (ts),
  KEY measure_day (measure_date)
) ENGINE=InnoDB DEFAULT CHARSET=latin1;
-- Debezium's signalling table, as common/hes.py creates it: `vigia-ingest repair` inserts an
-- execute-snapshot signal, the connector its incremental snapshot's watermarks.
CREATE TABLE IF NOT EXISTS debezium_signal (
  id varchar(64) NOT NULL,
  type varchar(32) NOT NULL,
  data varchar(2048) DEFAULT NULL,
  PRIMARY KEY (id)
) ENGINE=InnoDB DEFAULT CHARSET=latin1;
