"""Small pieces every Vigía component shares: Kafka client settings and logging setup."""
