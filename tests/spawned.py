"""Run writer processes that start together on a barrier and send one report each."""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable
from typing import Any


def run_writers(
    target: Callable[..., None],
    args: Callable[[int, Any, Any], tuple[Any, ...]],
    writers: int,
    timeout: float,
) -> list[Any]:
    """Start ``writers`` spawned processes ``target(*args(w, barrier, results))``.

    Each process puts one report (with ``writer`` and ``crashed``) on ``results``. Returns the
    reports sorted by writer, after checking that every process exited cleanly and none crashed.
    """
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(writers)
    results = ctx.Queue()
    procs = [
        ctx.Process(target=target, args=args(w, barrier, results), name=f"writer-{w}", daemon=True)
        for w in range(writers)
    ]
    for p in procs:
        p.start()
    try:
        # Drain the queue before joining: a child does not exit until its report is read.
        reports = [results.get(timeout=timeout) for _ in procs]
    finally:
        for p in procs:
            p.join(timeout=30)
            if p.is_alive():
                p.terminate()
                p.join()
    assert [p.exitcode for p in procs] == [0] * writers
    reports.sort(key=lambda r: r.writer)
    crashed = {r.writer: r.crashed for r in reports if r.crashed}
    assert not crashed, "writers crashed:\n" + "\n".join(f"{w}: {t}" for w, t in crashed.items())
    return reports
