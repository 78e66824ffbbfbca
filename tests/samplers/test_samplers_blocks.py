"""``samplers._blocks.thread_map``: the kept pools of the main thread, a pool of its own elsewhere, and an error or
Ctrl-C that stops the tasks and waits for the running ones."""

from __future__ import annotations

import threading
import time

import pytest

import samplers._blocks as blocks


def test_results_come_in_order_from_one_pool_kept_for_the_process():
    workers: set[threading.Thread] = set()
    for _ in range(3):
        out = blocks.thread_map(lambda x: (workers.add(threading.current_thread()), x * x)[1], range(20), 2)
        assert out == [x * x for x in range(20)]
    assert len(workers) <= 2 and all(t.is_alive() for t in workers)   # the same two serve every call, and outlive it


def test_a_task_may_map_again_from_its_own_thread():
    """From a thread other than the main one the map gets a pool of its own, so a task that maps in turn never waits
    on the pool that runs it (on one worker that would hang)."""
    inner = blocks.thread_map(lambda x: sum(blocks.thread_map(lambda y: x * y, range(3), 1)), range(4), 1)
    assert inner == [3 * x for x in range(4)]


def test_an_error_cancels_the_waiting_tasks_stops_and_waits_for_the_running_ones():
    finished: list[int] = []
    halted = []

    def task(x: int) -> int:
        if x == 0:
            raise ValueError("task 0 fails")
        time.sleep(0.05)
        finished.append(x)
        return x

    with pytest.raises(ValueError, match="task 0 fails"):
        blocks.thread_map(task, range(200), 2, on_interrupt=lambda: halted.append(True))
    done = len(finished)
    time.sleep(0.3)
    assert halted == [True]
    assert len(finished) == done          # nothing still ran after the map returned
    assert done < 199                     # the tasks still queued (5 s of them) were cancelled
