"""Extra librdkafka settings (SASL/SSL, timeouts, ...) passed through without code changes.

Every component accepts them the same way:
- the flag ``--kafka-option KEY=VALUE`` (repeatable), and
- the environment variable ``VIGIA_KAFKA_OPTIONS``: ``KEY=VALUE`` pairs separated by newlines or
  commas, e.g. ``security.protocol=SASL_SSL,sasl.mechanism=PLAIN,sasl.username=vigia``.
Flags win over the environment. Keys are librdkafka names; `to_kafka_python` translates the subset
kafka-python understands, because the exporter also talks to brokers through kafka-python.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping

ENV_VAR = "VIGIA_KAFKA_OPTIONS"


class KafkaOptionError(ValueError):
    """A malformed KEY=VALUE pair."""


def parse_pairs(pairs: Iterable[str]) -> dict[str, str]:
    options: dict[str, str] = {}
    for raw in pairs:
        item = raw.strip()
        if not item:
            continue
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise KafkaOptionError(f"Kafka option {item!r} is not KEY=VALUE")
        options[key.strip()] = value.strip()
    return options


def from_env(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    text = (environ if environ is not None else os.environ).get(ENV_VAR, "")
    return parse_pairs(text.replace(",", "\n").splitlines())


def merged(flag_pairs: Iterable[str], environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """Environment options overridden by flag options."""
    return {**from_env(environ), **parse_pairs(flag_pairs)}


# librdkafka key -> kafka-python KafkaAdminClient keyword.
_KAFKA_PYTHON_KEYS = {
    "security.protocol": "security_protocol",
    "sasl.mechanism": "sasl_mechanism",
    "sasl.mechanisms": "sasl_mechanism",
    "sasl.username": "sasl_plain_username",
    "sasl.password": "sasl_plain_password",
    "ssl.ca.location": "ssl_cafile",
    "ssl.certificate.location": "ssl_certfile",
    "ssl.key.location": "ssl_keyfile",
    "ssl.key.password": "ssl_password",
    "client.id": "client_id",
}


def to_kafka_python(options: Mapping[str, str]) -> dict[str, str]:
    """The kafka-python equivalents of the librdkafka options it understands; others are dropped."""
    return {_KAFKA_PYTHON_KEYS[k]: v for k, v in options.items() if k in _KAFKA_PYTHON_KEYS}
