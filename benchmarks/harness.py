"""The measurement harness the benchmarks share: what every fresh-process run needs around it.

Peak RSS (``VmHWM``) and CPU time of the measuring child, memory priming before each child
(``harness.py --prime GIB`` is the throwaway process), warming the page cache and private table
copies, the machine's CPU use by others meanwhile, latency percentiles, the environment and code
fingerprint recorded with the results (and warnings when they change during a run), and the text
/ Markdown tables the reports are printed as. See ``benchmarks/README.md`` ("How measurements
are taken").

Importing this module puts the checkout on ``sys.path``, so a benchmark run from a checkout
without an installed package imports ``deltalog`` from it.
"""

from __future__ import annotations

import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run from a checkout without an installed package
    sys.path.insert(0, str(ROOT))

ENGINES = ("deltalog", "delta-rs")
MARKER = ".bench_params.json"  # a generated table's parameters; left out of every copy


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


# --------------------------------------------------------------------------- in the child
def maxrss_kib() -> int:
    """Peak resident set size of this process in KiB.

    ``VmHWM`` from ``/proc/self/status``, not ``getrusage().ru_maxrss``: Linux carries
    ``ru_maxrss`` over ``execve`` from the pre-exec image, and with ``vfork``/``posix_spawn`` that
    image is the *parent's*, so a child would report at least the parent's peak. ``VmHWM``
    belongs to the new address space and starts from zero at exec.
    """
    try:
        with open("/proc/self/status", "rb") as fh:
            for line in fh:
                if line.startswith(b"VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)  # KiB on Linux


def cpu() -> tuple[float, float]:
    """(user, system) CPU seconds of this process so far."""
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime, ru.ru_stime


def self_cpu_s() -> float:
    """User + system CPU seconds of this process so far."""
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


# --------------------------------------------------------------------------- around the child
def prime_main(gib: float) -> None:
    """Write to ``gib`` GiB of fresh anonymous memory, then exit (see :func:`prime_memory`)."""
    import mmap

    n = int(gib * 2**30)
    chunk = bytes(64 * 2**20)
    m = mmap.mmap(-1, n)
    for _ in range(n // len(chunk)):
        m.write(chunk)
    m.close()


def prime_memory(gib: float) -> None:
    """Touch and free ``gib`` GiB in a throwaway process before a measurement.

    On a VM whose guest memory is backed lazily by the host (Firecracker here), the first touch
    of a guest page costs ~3 ms/MB of *system* time; later touches of the same page do not.
    Which pages a child gets is luck, so without this a 1.6 GB replay varied from 0.8 s to 4 s.
    Freed pages are reused first, so priming more than the largest child's peak makes runs
    stable and charges neither engine for the host's lazy allocation.
    """
    if gib > 0:
        subprocess.run(
            [sys.executable, str(Path(__file__).resolve()), "--prime", str(gib)],
            check=True,
            timeout=600,
        )


def warm(table: Path) -> None:
    """Read the log once so every measurement starts with it in the page cache."""
    for p in (table / "_delta_log").iterdir():
        if p.is_file():
            with p.open("rb") as fh:
                while fh.read(1 << 24):
                    pass


def fresh_copy(master: Path, scratch: Path, *, sync: bool = False) -> Path:
    """A private copy of ``master`` (marker left out), read once into the page cache.

    With ``sync`` the copy is flushed to disk (``os.sync``) before the run: otherwise the first
    fsyncs of the measured commits (deltalog fsyncs, delta-rs does not) would also write back
    the copy.
    """
    if scratch.exists():
        shutil.rmtree(scratch)
    shutil.copytree(master, scratch, ignore=shutil.ignore_patterns(MARKER))
    warm(scratch)
    if sync:
        os.sync()
    return scratch


def system_busy_s() -> float:
    """Non-idle CPU seconds of the whole machine since boot (all cores, from /proc/stat)."""
    try:
        with open("/proc/stat") as fh:
            vals = [int(x) for x in fh.readline().split()[1:9]]
    except (OSError, ValueError):
        return 0.0
    busy = sum(vals) - vals[3] - vals[4]  # minus idle and iowait
    return busy / os.sysconf("SC_CLK_TCK")


def children_cpu_s() -> float:
    """User + system CPU seconds of this process's waited-for children so far."""
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def proc_cpu_s(pid: int) -> float:
    """User + system CPU seconds of a live process (``/proc/<pid>/stat``), 0 if unknown."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return 0.0


# --------------------------------------------------------------------------- statistics
def percentile(values: list[float], q: float) -> float:
    """Linear-interpolated percentile (``q`` in 0..100), as numpy's default."""
    xs = sorted(values)
    if not xs:
        return float("nan")
    pos = (len(xs) - 1) * q / 100
    lo = int(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def lat_stats(ms: list[float]) -> dict[str, float]:
    """Mean, p50, p99 and max of latencies (empty when there are none)."""
    if not ms:
        return {}
    return {
        "mean": statistics.fmean(ms),
        "p50": percentile(ms, 50),
        "p99": percentile(ms, 99),
        "max": max(ms),
    }


def merge_errors(reports: Iterable[dict[str, Any]]) -> tuple[Counter[str], dict[str, str]]:
    """The writers' failures by type summed, and the first sample message of each type."""
    errors: Counter[str] = Counter()
    samples: dict[str, str] = {}
    for w in reports:
        errors.update(w["errors"])
        for k, v in w["error_samples"].items():
            samples.setdefault(k, v)
    return errors, samples


# --------------------------------------------------------------------------- environment
def environment() -> dict[str, Any]:
    """The checkout's ``git describe`` and the versions the results were measured with."""
    import deltalake
    import orjson
    import pyarrow

    import deltalog

    try:
        head = subprocess.run(
            ["git", "-C", str(ROOT), "describe", "--always", "--dirty"],
            capture_output=True,
            text=True,
            check=False,
        ).stdout.strip()
    except OSError:
        head = ""
    return {
        "commit": head or "unknown",
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "deltalog": deltalog.__version__,
        "deltalake": deltalake.__version__,
        "pyarrow": pyarrow.__version__,
        "orjson": orjson.__version__,
    }


def code_fingerprint() -> str:
    """SHA-256 over the library's source files, so edits made during a run are noticed.

    ``git describe --dirty`` stays the same while a dirty tree keeps changing.
    """
    import hashlib

    h = hashlib.sha256()
    for package in ("deltalog", "logstores", "checkpoints"):
        for f in sorted((ROOT / package).rglob("*.py")):
            h.update(str(f.relative_to(ROOT)).encode())
            h.update(f.read_bytes())
    return h.hexdigest()[:16]


def note_checkout_change(env: dict[str, Any]) -> None:
    """Warn, and say so in ``env``, when the checkout's commit changed since ``env`` was taken."""
    end_commit = environment()["commit"]
    if end_commit != env["commit"]:
        log(f"WARNING: the checkout changed during the run: {env['commit']} -> {end_commit}")
        env["commit"] = f"{env['commit']} -> {end_commit} (changed during the run!)"


def note_code_change(env: dict[str, Any]) -> None:
    """Warn, and say so in ``env``, when the sources changed since ``env["code_sha256"]``."""
    end_code = code_fingerprint()
    if end_code != env["code_sha256"]:
        log("WARNING: deltalog/logstores/checkpoints sources changed during the run")
        env["code_sha256"] = f"{env['code_sha256']} -> {end_code} (changed during the run!)"


# --------------------------------------------------------------------------- report tables
def fmt(x: float | None, spec: str) -> str:
    """``x`` formatted, or ``ERR`` for a measurement that failed."""
    return "ERR" if x is None else format(x, spec)


def text_table(head: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
    line = lambda r: " | ".join(c.ljust(w) for c, w in zip(r, widths, strict=True))  # noqa: E731
    return "\n".join([line(head), "-+-".join("-" * w for w in widths), *map(line, rows)])


def md_table(head: list[str], rows: list[list[str]]) -> str:
    out = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(out)


if __name__ == "__main__":  # the priming process: ``harness.py --prime GIB``
    if len(sys.argv) != 3 or sys.argv[1] != "--prime":
        sys.exit("usage: harness.py --prime GIB")
    prime_main(float(sys.argv[2]))
