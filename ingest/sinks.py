"""Exactly-once Parquet sinks for foreachBatch: each micro-batch published once, whatever dies when.

Why a protocol is needed: Spark writes a batch's offsets to the checkpoint's offset log *before*
running it and marks it done in the commit log *after* foreachBatch returns. A driver killed in
between (kill -9, OOM, node loss) replays the same batch id over the same offsets on restart, so
foreachBatch is at-least-once. Plain appends would then store the batch twice, or half a batch plus
a whole one.

The protocol (per batch id N, for the measure and the quarantine roots together):

1. Stage. Spark writes each DataFrame to ``<root>/_staging/batch-N/`` in overwrite mode, which first
   clears whatever an earlier attempt of N left there. Directories starting with ``_`` are invisible
   to Spark's and pyarrow's Parquet readers, and staging sits under the root so that the final
   renames stay within one file system.
2. Retract. If an intent file ``<checkpoint>/vigia-sink/batch-N.json`` exists, an earlier attempt of
   N reached step 3 and may have published some or all files; delete every file it lists.
3. Intent. Write (temp file + rename) the list of this attempt's target paths to that intent file.
4. Publish. Rename each staged file to its target:
   ``<root>/<partition dirs>/batch-N-<Spark's part file name>``. Every name carries the batch id
   and Spark's unique write id, so files of different batches and attempts never collide.
5. Clean up: delete the staging directories and the intent files of batches before N (Spark never
   replays a batch once a later one has started, and only the last one can be pending).

After a crash at any step, the replay of N repeats 1–5: step 2 removes exactly the files an earlier
attempt published (they are all listed in its intent before the first rename) and step 4 publishes
one full copy. So once N is in Spark's commit log, storage holds N exactly once. Readers may see a
partial batch N only while N is being published or replayed after a crash.

Intents live in the checkpoint, not in the output: starting over with a fresh checkpoint (batch ids
from 0 again) never retracts files of an earlier query. Files are moved through Hadoop's FileSystem
API, so local paths, ``hdfs://`` and ``s3a://`` work alike (on S3 a rename is a copy: slower, still
idempotent).
"""

from __future__ import annotations

import json
import logging
import posixpath
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from pyspark.sql import DataFrame, SparkSession

log = logging.getLogger(__name__)

STAGING_DIR: Final = "_staging"
INTENT_DIR: Final = "vigia-sink"


class SinkError(RuntimeError):
    """An output, quarantine or checkpoint path that cannot be written: one sentence."""


def batch_dir_name(batch_id: int) -> str:
    return f"batch-{batch_id:012d}"


def published_name(batch_id: int, part_name: str) -> str:
    return f"{batch_dir_name(batch_id)}-{part_name}"


def intent_name(batch_id: int) -> str:
    return f"{batch_dir_name(batch_id)}.json"


def batch_id_of_intent(name: str) -> int | None:
    stem, dot, ext = name.partition(".")
    if ext != "json" or not dot or not stem.startswith("batch-"):
        return None
    digits = stem[len("batch-") :]
    return int(digits) if digits.isdigit() else None


@dataclass(frozen=True)
class Move:
    source: str
    target: str


def plan_moves(root: str, batch_id: int, staged: Sequence[str]) -> list[Move]:
    """Where each staged file of batch ``batch_id`` goes. ``staged`` holds paths relative to the
    staging directory (``measure_date=2026-11-20/part-00000-….parquet``); hidden files
    (``_SUCCESS``, ``.crc``) are Spark's bookkeeping and stay behind."""
    staging = posixpath.join(root, STAGING_DIR, batch_dir_name(batch_id))
    moves = []
    for relative in sorted(staged):
        directory, name = posixpath.split(relative)
        if name.startswith(("_", ".")):
            continue
        target_dir = posixpath.join(root, directory) if directory else root
        moves.append(
            Move(
                posixpath.join(staging, relative),
                posixpath.join(target_dir, published_name(batch_id, name)),
            )
        )
    return moves


class HadoopFs:
    """The few Hadoop FileSystem calls the protocol needs, through Spark's JVM."""

    def __init__(self, spark: SparkSession) -> None:
        self._jvm: Any = spark.sparkContext._jvm
        self._conf: Any = spark.sparkContext._jsc.hadoopConfiguration()

    def _path(self, path: str) -> tuple[Any, Any]:
        jpath = self._jvm.org.apache.hadoop.fs.Path(path)
        return jpath, jpath.getFileSystem(self._conf)

    def qualify(self, path: str) -> str:
        """An absolute URI (``file:/…``, ``hdfs://…``) so relative paths cannot drift."""
        jpath, fs = self._path(path)
        return str(fs.makeQualified(jpath).toString())

    def exists(self, path: str) -> bool:
        jpath, fs = self._path(path)
        return bool(fs.exists(jpath))

    def list_files(self, directory: str) -> list[str]:
        """Files below ``directory``, relative to it; [] when it does not exist."""
        jpath, fs = self._path(directory)
        if not fs.exists(jpath):
            return []
        base = str(fs.makeQualified(jpath).toString()).rstrip("/") + "/"
        found = []
        files = fs.listFiles(jpath, True)
        while files.hasNext():
            full = str(files.next().getPath().toString())
            found.append(full[len(base) :] if full.startswith(base) else full)
        return found

    def delete(self, path: str, recursive: bool = False) -> None:
        jpath, fs = self._path(path)
        fs.delete(jpath, recursive)

    def rename(self, source: str, target: str) -> None:
        src, fs = self._path(source)
        dst = self._jvm.org.apache.hadoop.fs.Path(target)
        fs.mkdirs(dst.getParent())
        if not fs.rename(src, dst):
            raise SinkError(f"could not move {source} to {target}")

    def write_text(self, path: str, text: str) -> None:
        """Write then rename, so a reader never sees half a file."""
        jpath, fs = self._path(path)
        temp = self._jvm.org.apache.hadoop.fs.Path(path + ".tmp")
        out = fs.create(temp, True)
        try:
            out.write(bytearray(text.encode("utf-8")))
        finally:
            out.close()
        fs.delete(jpath, False)
        if not fs.rename(temp, jpath):
            raise SinkError(f"could not write {path}")

    def read_text(self, path: str) -> str | None:
        jpath, fs = self._path(path)
        if not fs.exists(jpath):
            return None
        stream = fs.open(jpath)
        try:
            return str(self._jvm.org.apache.commons.io.IOUtils.toString(stream, "UTF-8"))
        finally:
            stream.close()

    def check_writable(self, directory: str, what: str) -> None:
        """Create ``directory`` and a probe file in it, or raise SinkError saying why not."""
        probe = posixpath.join(directory, "_vigia_write_probe")
        try:
            jpath, fs = self._path(directory)
            fs.mkdirs(jpath)
            self.write_text(probe, "ok")
            self.delete(probe)
        except SinkError:
            raise
        except Exception as exc:  # py4j wraps Java's IOExceptions; the first line says enough
            first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else repr(exc)
            raise SinkError(f"the {what} path {directory} is not writable ({first_line})") from exc


@dataclass(frozen=True)
class Output:
    """One DataFrame of a batch and where it goes."""

    root: str
    frame: DataFrame
    partition_by: tuple[str, ...] = ()


class ExactlyOnceSink:
    """Publishes each batch's outputs following the protocol in this module's docstring."""

    def __init__(self, spark: SparkSession, checkpoint: str, fs: HadoopFs | None = None) -> None:
        self._fs = fs if fs is not None else HadoopFs(spark)
        self._intents = posixpath.join(self._fs.qualify(checkpoint), INTENT_DIR)

    @property
    def fs(self) -> HadoopFs:
        return self._fs

    def write(self, batch_id: int, outputs: Sequence[Output]) -> list[str]:
        """Publish ``outputs`` as batch ``batch_id``; returns the published paths."""
        moves: list[Move] = []
        for output in outputs:
            root = self._fs.qualify(output.root)
            staging = posixpath.join(root, STAGING_DIR, batch_dir_name(batch_id))
            writer = output.frame.write.mode("overwrite")
            if output.partition_by:
                writer = writer.partitionBy(*output.partition_by)
            writer.parquet(staging)
            moves.extend(plan_moves(root, batch_id, self._fs.list_files(staging)))

        intent = posixpath.join(self._intents, intent_name(batch_id))
        self._retract(intent)
        self._fs.write_text(
            intent, json.dumps({"batch_id": batch_id, "files": [m.target for m in moves]})
        )
        for move in moves:
            self._fs.rename(move.source, move.target)
        for output in outputs:
            root = self._fs.qualify(output.root)
            self._fs.delete(posixpath.join(root, STAGING_DIR, batch_dir_name(batch_id)), True)
        self._forget_before(batch_id)
        return [m.target for m in moves]

    def _retract(self, intent: str) -> None:
        text = self._fs.read_text(intent)
        if text is None:
            return
        earlier = json.loads(text)["files"]
        log.warning(
            "batch %s is a replay: removing the %d files an earlier attempt published",
            posixpath.basename(intent),
            len(earlier),
        )
        for path in earlier:
            self._fs.delete(path)

    def _forget_before(self, batch_id: int) -> None:
        for name in self._fs.list_files(self._intents):
            earlier = batch_id_of_intent(name)
            if earlier is not None and earlier < batch_id:
                self._fs.delete(posixpath.join(self._intents, name))
