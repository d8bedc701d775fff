"""Acceptance: N writers race to create the same commit file; exactly one wins every time.

Every round, all writers wait on one barrier and then call ``write(path, payload,
overwrite=False)`` for the same ``<round>.json`` at the same instant. The winner's payload must
be what ends up in the file, and a local store must leave no temp files behind.
"""

from __future__ import annotations

import multiprocessing
import os
import threading
from typing import Any

import pytest

from deltalog.logstores import FileAlreadyExistsError, LocalLogStore, MemoryLogStore

WRITERS = 8
ROUNDS = 200
BARRIER_TIMEOUT = 30.0


def _name(round_: int) -> str:
    return f"{round_:020d}.json"


def _payload(writer: int, round_: int, token: str) -> bytes:
    # Unique per writer: the round, the writer index and a per-writer token (pid or thread id).
    return f'{{"commitInfo":{{"writer":{writer},"token":"{token}","round":{round_}}}}}\n'.encode()


def _race(store: Any, directory: str, writer: int, token: str, barrier: Any) -> list[str]:
    """Run every round for one writer; returns 'won', 'lost' or an error text per round."""
    outcomes = []
    for round_ in range(ROUNDS):
        try:
            barrier.wait(timeout=BARRIER_TIMEOUT)
        except threading.BrokenBarrierError:
            outcomes.append("error: barrier broken (another writer died or hung)")
            break
        try:
            store.write(f"{directory}/{_name(round_)}", _payload(writer, round_, token))
        except FileAlreadyExistsError:
            outcomes.append("lost")
        except Exception as exc:  # reported by the parent, so one failure cannot hang the rest
            outcomes.append(f"error: {exc!r}")
        else:
            outcomes.append("won")
    return outcomes


def _process_writer(directory: str, writer: int, barrier: Any, results: Any) -> None:
    """Child process body (module level so that the spawn start method can import it)."""
    token = f"pid{os.getpid()}"
    try:
        outcomes = _race(LocalLogStore(), directory, writer, token, barrier)
    except BaseException as exc:
        barrier.abort()
        outcomes = [f"error: {exc!r}"]
    results.put((writer, token, outcomes))


def _check_rounds(
    read: Any, outcomes_by_writer: dict[int, list[str]], tokens: dict[int, str]
) -> None:
    errors = {w: [o for o in out if o.startswith("error")] for w, out in outcomes_by_writer.items()}
    assert not any(errors.values()), f"writers failed: {errors}"
    for w, out in outcomes_by_writer.items():
        assert len(out) == ROUNDS, f"writer {w} ran {len(out)} rounds, not {ROUNDS}"
    for round_ in range(ROUNDS):
        winners = [w for w, out in outcomes_by_writer.items() if out[round_] == "won"]
        assert len(winners) == 1, f"round {round_}: winners {winners}"
        (winner,) = winners
        assert read(_name(round_)) == _payload(winner, round_, tokens[winner]), (
            f"round {round_}: file content is not the winner's (writer {winner}) payload"
        )


@pytest.mark.timeout(120)
def test_processes_race_local_store_exactly_one_winner(tmp_path: Any) -> None:
    directory = str(tmp_path / "_delta_log")
    os.mkdir(directory)
    # spawn: the parent may already run threads (pyarrow, delta-rs), which fork does not survive.
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(WRITERS)
    results = ctx.Queue()
    procs = [
        ctx.Process(target=_process_writer, args=(directory, w, barrier, results), daemon=True)
        for w in range(WRITERS)
    ]
    for p in procs:
        p.start()
    try:
        collected = [results.get(timeout=90) for _ in procs]
    finally:
        for p in procs:
            p.join(timeout=10)
            if p.is_alive():
                p.terminate()
                p.join()
    assert all(p.exitcode == 0 for p in procs), [p.exitcode for p in procs]

    outcomes = {w: out for w, _, out in collected}
    tokens = {w: tok for w, tok, _ in collected}
    assert sorted(outcomes) == list(range(WRITERS))

    def read(name: str) -> bytes:
        with open(os.path.join(directory, name), "rb") as fh:
            return fh.read()

    _check_rounds(read, outcomes, tokens)
    leftovers = sorted(set(os.listdir(directory)) - {_name(r) for r in range(ROUNDS)})
    assert not leftovers, f"files left behind besides the commits: {leftovers[:10]}"
    assert len(os.listdir(directory)) == ROUNDS


@pytest.mark.timeout(60)
def test_threads_race_memory_store_exactly_one_winner() -> None:
    store = MemoryLogStore()
    directory = "memory://race/table/_delta_log"
    barrier = threading.Barrier(WRITERS)
    outcomes: dict[int, list[str]] = {}
    tokens = {w: f"thread{w}" for w in range(WRITERS)}

    def run(writer: int) -> None:
        try:
            outcomes[writer] = _race(store, directory, writer, tokens[writer], barrier)
        except BaseException as exc:
            barrier.abort()
            outcomes[writer] = [f"error: {exc!r}"]

    threads = [threading.Thread(target=run, args=(w,), daemon=True) for w in range(WRITERS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=50)
    assert not any(t.is_alive() for t in threads), "a writer thread hung"

    _check_rounds(lambda name: store.read(f"{directory}/{name}"), outcomes, tokens)
    listed = [s.name for s in store.list_from(f"{directory}/")]
    assert listed == [_name(r) for r in range(ROUNDS)]
