"""Which failures of the streaming query the job answers by starting it again in-process.

Spark gives the Python process behind a Python data source a fixed 10 s to connect back to the
JVM (`PythonWorkerFactory`); on a loaded machine that process starts slower and the query fails
with "Python worker failed to connect back" before it reads anything. The failure says nothing
about Kafka, the measures or the sink, and the checkpoint makes a new start exactly-once, so the
job starts the query again instead of exiting, a bounded number of times in a row: a failure that
keeps coming back is not transient and ends the job as any other."""

from __future__ import annotations

from dataclasses import dataclass

TRANSIENT_FAILURES = ("Python worker failed to connect back",)
RESTARTS_IN_A_ROW = 3


@dataclass
class QueryRestarts:
    """Counts restarts since the last batch that completed; `limit` in a row at most."""

    limit: int = RESTARTS_IN_A_ROW
    in_a_row: int = 0
    last_batch: int = -1

    def restart(self, failure: str, last_batch: int) -> bool:
        """Whether to start the query again after `failure` (its text); `last_batch`: the id of
        the last batch it completed, -1 for none (ids carry on across starts, from the
        checkpoint)."""
        if last_batch > self.last_batch:
            self.last_batch, self.in_a_row = last_batch, 0
        if self.in_a_row >= self.limit or not any(t in failure for t in TRANSIENT_FAILURES):
            return False
        self.in_a_row += 1
        return True
