"""Long fuzzing runs over the targets of tests/fuzz_targets.py.

    python scripts/fuzz.py --target commit --minutes 10
    python scripts/fuzz.py --target all --minutes 60      # the time is shared by the targets
    python scripts/fuzz.py --list

Runs hypothesis with fresh random seeds, round after round, until the time is up. The first
failure of a target is shrunk by hypothesis, written into the target's corpus directory
(``tests/fuzz_corpus/<corpus>/crash-<target>-<exception>-<hash><suffix>``, where
``tests/test_fuzz.py`` replays it from then on) and reported; the run then moves on to the next
target. Each target runs in a child process that records the input it is on, so an input that
kills the interpreter (a native abort or segfault in pyarrow) is saved too, named after the
signal. Exit status: 0 when nothing failed, 1 otherwise.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from fuzz_targets import TARGETS, Input, Target, save_crasher
from hypothesis import HealthCheck, given, settings


class _Recorder:
    """Keeps the input under test in a file, overwritten in place for every example."""

    def __init__(self, path: Path) -> None:
        self._fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)

    def record(self, data: bytes, suffix: str) -> None:
        # The suffix goes first, on its own line; the data follows byte for byte.
        blob = suffix.encode() + b"\n" + data
        os.ftruncate(self._fd, 0)
        os.pwrite(self._fd, blob, 0)


def _recorded(path: Path) -> Input:
    suffix, _, data = path.read_bytes().partition(b"\n")
    return data, suffix.decode()


def fuzz(target: Target, seconds: float, round_examples: int, recorder: _Recorder | None) -> bool:
    """Fuzz one target for ``seconds``; whether a failure was found (and saved)."""
    failures: list[tuple[Input, BaseException]] = []

    @settings(
        max_examples=round_examples,
        deadline=None,  # the targets' own time limit catches hangs
        database=None,
        derandomize=False,
        suppress_health_check=list(HealthCheck),
        report_multiple_bugs=False,
    )
    @given(target.strategy())
    def one_round(inp: Input) -> None:
        if recorder is not None:
            recorder.record(*inp)
        try:
            target.check(*inp)
        except Exception as exc:
            failures.append((inp, exc))  # hypothesis replays the shrunk input last
            raise

    end = time.monotonic() + seconds
    rounds = 0
    while time.monotonic() < end:
        try:
            one_round()
        except Exception:
            (data, suffix), exc = failures[-1]
            path = save_crasher(target, data, suffix, type(exc).__name__)
            traceback.print_exception(exc)
            print(f"{target.name}: failure saved to {path}", flush=True)
            return True
        rounds += 1
    print(f"{target.name}: {rounds} rounds of {round_examples} examples, no failure", flush=True)
    return False


def _isolated(target: Target, seconds: float, round_examples: int) -> bool:
    """Run :func:`fuzz` in a child process; save the input that killed it, if one did."""
    with tempfile.TemporaryDirectory(prefix="deltalog-fuzz-") as tmp:
        current = Path(tmp, "current-input")
        command = [sys.executable, __file__, "--target", target.name, "--seconds", str(seconds)]
        command += ["--round", str(round_examples), "--record", str(current)]
        child = subprocess.run(command, check=False)
        if child.returncode >= 0:
            return child.returncode != 0
        name = signal.Signals(-child.returncode).name
        data, suffix = _recorded(current)
        path = save_crasher(target, data, suffix, name)
        print(f"{target.name}: the interpreter died ({name}); input saved to {path}", flush=True)
        return True


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--target", default="all", help="a target name, or 'all'")
    parser.add_argument("--minutes", type=float, default=10.0, help="total time (default 10)")
    parser.add_argument("--round", type=int, default=200, help="examples per round")
    parser.add_argument("--list", action="store_true", help="list the targets and exit")
    parser.add_argument("--seconds", type=float, help=argparse.SUPPRESS)  # child process
    parser.add_argument("--record", type=Path, help=argparse.SUPPRESS)  # child process
    args = parser.parse_args()
    if args.list:
        for t in TARGETS.values():
            print(f"{t.name:18} corpus tests/fuzz_corpus/{t.corpus}/")
        return 0
    if args.target != "all" and args.target not in TARGETS:
        parser.error(f"unknown target {args.target!r}; one of: all, {', '.join(TARGETS)}")
    if args.record is not None:  # the child: one target, in this process
        found = fuzz(TARGETS[args.target], args.seconds, args.round, _Recorder(args.record))
        return 1 if found else 0
    chosen = list(TARGETS.values()) if args.target == "all" else [TARGETS[args.target]]
    share = args.minutes * 60 / len(chosen)
    failed = [t.name for t in chosen if _isolated(t, share, args.round)]
    if failed:
        print(f"failures in: {', '.join(failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
