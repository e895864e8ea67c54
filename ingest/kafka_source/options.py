"""The source's options, named like those of Spark's built-in Kafka source where one exists.

``.option("kafka.bootstrap.servers", ...)``, ``subscribe`` (comma-separated topics),
``startingOffsets`` (earliest | latest | JSON), ``failOnDataLoss`` (true), ``maxOffsetsPerTrigger``,
any other ``kafka.<librdkafka key>`` passed to the consumers unchanged (SASL/SSL, ...), and Vigía's
own ``commitGroupId`` (vigia-ingest; empty to commit nothing), ``kafkaTimeoutMs`` (metadata and
watermark calls, retried within it; 30000), ``readTimeoutMs`` (a partition read without progress,
120000), ``retrySpoolDir`` (where the planner counts Kafka retries, and the reads too when the
source was registered without an accumulator; see `retry_spool`) and ``lossLogDir`` (where ranges
skipped with ``failOnDataLoss`` false are recorded; see `loss_log`).

The readers' group: librdkafka creates no consumer without a ``group.id``, and even a consumer
that is only assigned partitions (never subscribes, never commits) looks up its group's
coordinator, which a cluster with ACLs authorizes like any group access (Describe and Read on the
group). The readers use ``<commitGroupId>-reader`` so that one ACL prefix, ``<group-id>``, covers
both groups (see the README's ACL table); ``vigia-ingest-reader`` when nothing is committed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from vigia.ingest.kafka_source.adapter import consumer_config
from vigia.ingest.kafka_source.offsets import StartingOffsets

KAFKA_PREFIX: Final = "kafka."
DEFAULT_COMMIT_GROUP: Final = "vigia-ingest"
READER_GROUP_SUFFIX: Final = "-reader"


def reader_group(commit_group_id: str) -> str:
    """The group.id of the read-only consumers (see the module docstring)."""
    return (commit_group_id or DEFAULT_COMMIT_GROUP) + READER_GROUP_SUFFIX


class SourceOptionError(ValueError):
    pass


def _flag(options: Mapping[str, str], key: str, default: bool) -> bool:
    text = options.get(key)
    if text is None:
        return default
    lowered = text.strip().lower()
    if lowered not in ("true", "false"):
        raise SourceOptionError(f"option {key} must be true or false, not {text!r}")
    return lowered == "true"


def _positive(options: Mapping[str, str], key: str, default: int | None) -> int | None:
    text = options.get(key)
    if text is None or not text.strip():
        return default
    try:
        value = int(text)
    except ValueError:
        raise SourceOptionError(f"option {key} must be an integer, not {text!r}") from None
    if value <= 0:
        raise SourceOptionError(f"option {key} must be positive, not {value}")
    return value


@dataclass(frozen=True)
class SourceOptions:
    bootstrap_servers: str
    topics: tuple[str, ...]
    starting_offsets: StartingOffsets
    fail_on_data_loss: bool = True
    max_offsets_per_trigger: int | None = None
    commit_group_id: str = DEFAULT_COMMIT_GROUP
    kafka_timeout_s: float = 30.0
    read_timeout_s: float = 120.0
    retry_spool_dir: str = ""
    loss_log_dir: str = ""
    kafka_options: dict[str, str] = field(default_factory=dict)

    @classmethod
    def parse(cls, raw: Mapping[str, str]) -> SourceOptions:
        """Spark hands data sources their options with lower-cased keys; so do we."""
        options = {k.lower(): v for k, v in raw.items()}
        servers = options.get("kafka.bootstrap.servers", "").strip()
        if not servers:
            raise SourceOptionError("option kafka.bootstrap.servers is required")
        topics = tuple(t.strip() for t in options.get("subscribe", "").split(",") if t.strip())
        if not topics:
            raise SourceOptionError("option subscribe (the topic or topics to read) is required")
        kafka_options = {
            key[len(KAFKA_PREFIX) :]: value
            for key, value in options.items()
            if key.startswith(KAFKA_PREFIX) and key != "kafka.bootstrap.servers"
        }
        for reserved in ("group.id", "enable.auto.commit"):
            if reserved in kafka_options:
                raise SourceOptionError(
                    f"option kafka.{reserved} is not supported: offsets live in the checkpoint; "
                    "set commitGroupId to choose the group the source commits to"
                )
        kafka_timeout = _positive(options, "kafkatimeoutms", 30_000)
        read_timeout = _positive(options, "readtimeoutms", 120_000)
        assert kafka_timeout is not None and read_timeout is not None
        return cls(
            bootstrap_servers=servers,
            topics=topics,
            starting_offsets=StartingOffsets.parse(options.get("startingoffsets", "latest")),
            fail_on_data_loss=_flag(options, "failondataloss", True),
            max_offsets_per_trigger=_positive(options, "maxoffsetspertrigger", None),
            commit_group_id=options.get("commitgroupid", DEFAULT_COMMIT_GROUP).strip(),
            kafka_timeout_s=kafka_timeout / 1000,
            read_timeout_s=read_timeout / 1000,
            retry_spool_dir=options.get("retryspooldir", "").strip(),
            loss_log_dir=options.get("losslogdir", "").strip(),
            kafka_options=kafka_options,
        )

    def reader_config(self) -> dict[str, Any]:
        return consumer_config(
            self.bootstrap_servers, self.kafka_options, reader_group(self.commit_group_id)
        )
