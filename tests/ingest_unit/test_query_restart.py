from vigia.ingest.query_restart import QueryRestarts

WORKER = "[STREAM_FAILED] Query terminated with exception: Python worker failed to connect back."


def test_a_worker_that_did_not_connect_back_restarts_the_query_up_to_the_limit_in_a_row() -> None:
    restarts = QueryRestarts(limit=3)
    assert [restarts.restart(WORKER, -1) for _ in range(4)] == [True, True, True, False]


def test_a_completed_batch_starts_the_count_again() -> None:
    restarts = QueryRestarts(limit=2)
    assert restarts.restart(WORKER, 4) and restarts.restart(WORKER, 4)
    assert not restarts.restart(WORKER, 4)
    assert restarts.restart(WORKER, 5)
    assert restarts.in_a_row == 1


def test_any_other_failure_ends_the_job() -> None:
    restarts = QueryRestarts()
    assert not restarts.restart("[STREAM_FAILED] the sink could not write", -1)
    assert restarts.in_a_row == 0
