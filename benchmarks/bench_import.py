"""Import time of ``import deltalog`` against ``import deltalake``, each in a fresh interpreter.

Also times the first use (``from deltalog import DeltaTable``, which loads pyarrow) and reports
which heavy packages a plain ``import deltalog`` loaded (it should load none).

    python benchmarks/bench_import.py [--runs 15]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys

STATEMENTS = {
    "import deltalog": "import deltalog",
    "import deltalake": "import deltalake",
    "from deltalog import DeltaTable": "from deltalog import DeltaTable",
    "from deltalake import DeltaTable": "from deltalake import DeltaTable",
}
HEAVY = ("pandas", "pyspark", "boto3", "botocore", "azure", "google", "numpy", "pyarrow")


def _time(statement: str) -> float:
    code = f"import time; t = time.perf_counter(); {statement}; print(time.perf_counter() - t)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return float(done.stdout.strip())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    medians = {}
    for name, statement in STATEMENTS.items():
        times = [_time(statement) for _ in range(args.runs)]
        medians[name] = statistics.median(times)
    print(f"{'statement':36} {'median ms':>10}")
    for name, value in medians.items():
        print(f"{name:36} {value * 1000:10.1f}")
    for ours, theirs in (
        ("import deltalog", "import deltalake"),
        ("from deltalog import DeltaTable", "from deltalake import DeltaTable"),
    ):
        print(f"ratio {ours!r} / {theirs!r}: {medians[ours] / medians[theirs]:.2f}x")
    code = "import deltalog, sys; print(sorted({m.split('.')[0] for m in sys.modules} & set(%r)))"
    done = subprocess.run(
        [sys.executable, "-c", code % (HEAVY,)], capture_output=True, text=True, check=True
    )
    print(f"heavy packages loaded by 'import deltalog': {done.stdout.strip()}")


if __name__ == "__main__":
    main()
