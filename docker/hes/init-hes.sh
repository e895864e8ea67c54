#!/bin/bash
# MySQL image init script (/docker-entrypoint-initdb.d, run once on an empty data directory): the
# hes database and table, and one user per role, each with only what it needs. Passwords come from
# the environment (.env); the table from schema.sql, the same DDL as common/hes.py.
set -euo pipefail
: "${HES_WRITER_PASSWORD:?}" "${HES_READER_PASSWORD:?}" "${HES_MONITOR_PASSWORD:?}" "${HES_CONNECT_PASSWORD:?}"
: "${HES_SIGNAL_PASSWORD:?}"

mysql_as_root() { mysql --protocol=socket -uroot -p"${MYSQL_ROOT_PASSWORD}" "$@"; }

mysql_as_root -e "CREATE DATABASE IF NOT EXISTS hes"
mysql_as_root hes < "${HES_SCHEMA:-/etc/vigia/hes/schema.sql}"
mysql_as_root <<SQL
-- The simulator, standing in for the head-end system: writes readings and corrections.
CREATE USER IF NOT EXISTS 'hes_writer'@'%' IDENTIFIED BY '${HES_WRITER_PASSWORD}';
GRANT SELECT, INSERT, UPDATE ON hes.* TO 'hes_writer'@'%';
-- The exporter's source watch and the completeness checks: read only. REPLICATION CLIENT (BINLOG
-- MONITOR on MariaDB 10.5+, of which it is an alias) lets the exporter list the binlog files.
CREATE USER IF NOT EXISTS 'hes_reader'@'%' IDENTIFIED BY '${HES_READER_PASSWORD}';
GRANT SELECT ON hes.* TO 'hes_reader'@'%';
GRANT REPLICATION CLIENT ON *.* TO 'hes_reader'@'%';
-- mysqld_exporter's default collectors.
CREATE USER IF NOT EXISTS 'hes_monitor'@'%' IDENTIFIED BY '${HES_MONITOR_PASSWORD}' WITH MAX_USER_CONNECTIONS 3;
GRANT PROCESS, REPLICATION CLIENT, SELECT ON *.* TO 'hes_monitor'@'%';
-- Debezium's MySQL connector: the snapshot, then the binlog.
CREATE USER IF NOT EXISTS 'dbz'@'%' IDENTIFIED BY '${HES_CONNECT_PASSWORD}';
GRANT SELECT, RELOAD, SHOW DATABASES, REPLICATION SLAVE, REPLICATION CLIENT, LOCK TABLES ON *.* TO 'dbz'@'%';
-- ...and the watermarks of its incremental snapshots (`vigia-ingest repair`).
GRANT INSERT ON hes.debezium_signal TO 'dbz'@'%';
-- vigia-ingest repair: one execute-snapshot signal per repair, nothing else.
CREATE USER IF NOT EXISTS 'hes_signal'@'%' IDENTIFIED BY '${HES_SIGNAL_PASSWORD}';
GRANT INSERT ON hes.debezium_signal TO 'hes_signal'@'%';
SQL
# MariaDB (10.5+) reads replica status only with SLAVE MONITOR, which MySQL has no name for (there
# REPLICATION CLIENT covers it): without it mysqld_exporter's replica scraper fails (Error 1227).
# Told apart by a variable only MariaDB has: its version string may be set to read as MySQL 5.7.
if [ -n "$(mysql_as_root -N -e "SHOW GLOBAL VARIABLES LIKE 'aria_block_size'")" ]; then
  mysql_as_root -e "GRANT SLAVE MONITOR ON *.* TO 'hes_monitor'@'%'"
fi
