"""Where the job records the ranges Kafka deleted before it read them, for the completeness check.

One JSON file per range (`RetentionLoss.file_name`) in ``<output>/_vigia_losses/``: beside the
measures it concerns, so the check finds it from ``--output`` alone, and hidden from Parquet readers
by its leading ``_``. The writers are Spark tasks in Python workers, without the driver's Hadoop
file system, so the files go through pyarrow's: local paths, ``hdfs://`` and ``s3a://`` (as
``s3://``, with pyarrow's own AWS credentials chain, not the ``fs.s3a.*`` settings).
"""

from __future__ import annotations

import json
import logging
import posixpath
import uuid
from typing import Final

import pyarrow.fs as pafs

from vigia.ingest.retention_loss import RetentionLoss, merged

log = logging.getLogger(__name__)

LOSS_DIR: Final = "_vigia_losses"


def loss_dir(output: str) -> str:
    return posixpath.join(output.rstrip("/"), LOSS_DIR)


# Hadoop's S3 connector, the one --output names for Spark, is s3a://; pyarrow knows no such
# scheme ("Unrecognized filesystem type") and reads the same bucket and key as s3://.
_PYARROW_SCHEMES: Final = {"s3a": "s3"}


def pyarrow_uri(directory: str) -> str:
    """``directory`` as pyarrow's file systems name it."""
    scheme, separator, rest = directory.partition("://")
    return f"{_PYARROW_SCHEMES.get(scheme, scheme)}{separator}{rest}"


def _resolve(directory: str) -> tuple[pafs.FileSystem, str]:
    if "://" not in directory:
        return pafs.LocalFileSystem(), posixpath.abspath(directory)
    return pafs.FileSystem.from_uri(pyarrow_uri(directory))


def record_loss(directory: str, loss: RetentionLoss) -> None:
    """Writes (or rewrites, for a task run again) the record of ``loss``; a failure is logged,
    not raised: the read goes on, and the job's skipped-offsets counter still has the loss."""
    try:
        fs, path = _resolve(directory)
        fs.create_dir(path, recursive=True)
        target = posixpath.join(path, loss.file_name)
        temporary = f"{target}.{uuid.uuid4().hex}.tmp"
        with fs.open_output_stream(temporary) as out:
            out.write(json.dumps(loss.to_json()).encode("utf-8"))
        fs.move(temporary, target)
    except (OSError, ValueError) as exc:
        log.error("cannot record the loss of %s in %s: %s", loss.describe(), directory, exc)


def read_losses(directory: str) -> list[RetentionLoss]:
    """Every recorded loss, overlapping records of a partition merged; none without the folder."""
    fs, path = _resolve(directory)
    if fs.get_file_info(path).type == pafs.FileType.NotFound:
        return []
    losses = []
    for info in fs.get_file_info(pafs.FileSelector(path)):
        if info.type == pafs.FileType.File and info.base_name.endswith(".json"):
            with fs.open_input_stream(info.path) as stream:
                losses.append(RetentionLoss.from_json(json.loads(stream.read())))
    return merged(losses)
