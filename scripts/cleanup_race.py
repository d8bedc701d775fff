"""Acceptance runs: writer processes racing log cleanup lose no acknowledged append.

    python scripts/cleanup_race.py                       # 4 writers x 300, 3 runs, local disk
    python scripts/cleanup_race.py --store s3 --writers 2 --appends 100
    python scripts/cleanup_race.py --store s3_dynamodb --writers 2 --appends 100

Every table has ``delta.logRetentionDuration=interval 0 seconds`` and
``delta.checkpointInterval=2`` (see ``tests/cleanup_race.py`` for what each run checks). The S3
stores run against the moto server of the test fixtures, started here. Prints one line per run;
exit status 0 when every run lost nothing, doubled nothing and checked clean.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import uuid
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1] / "tests"
sys.path.insert(0, str(TESTS))

import cleanup_race  # noqa: E402
from servers import harness  # noqa: E402
from servers.fixtures import BUCKET, s3_options  # noqa: E402


def _moto(log_dir: Path) -> harness.ServerProcess:
    import boto3

    server = harness.start_moto(log_dir)
    boto3.client(
        "s3",
        endpoint_url=server.endpoint,
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    ).create_bucket(Bucket=BUCKET)
    return server


def main() -> int:
    """Run the acceptance runs; 0 when all were clean."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", choices=["local", "s3", "s3_dynamodb"], default="local")
    parser.add_argument("--writers", type=int, default=4)
    parser.add_argument("--appends", type=int, default=300)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    failed = 0
    with tempfile.TemporaryDirectory(prefix="cleanup-race-") as tmp:
        server = _moto(Path(tmp) / "server-logs") if args.store != "local" else None
        try:
            for run in range(1, args.runs + 1):
                if server is None:
                    uri, options = str(Path(tmp) / f"table-{run}"), {}
                else:
                    protocol = "dynamodb" if args.store == "s3_dynamodb" else "conditional-put"
                    uri = f"s3://{BUCKET}/race-{uuid.uuid4().hex[:8]}"
                    options = s3_options(server.endpoint, protocol)
                outcome = cleanup_race.run(
                    uri, options, writers=args.writers, appends=args.appends, timeout=3600
                )
                status = "ok" if outcome.ok else "FAILED"
                print(f"{args.store} run {run}: {status} {outcome.line()}", flush=True)
                for line in outcome.missing[:5] + outcome.findings[:5] + outcome.unknown[:5]:
                    print(f"    {line}", flush=True)
                if outcome.twice:
                    print(f"    versions acknowledged twice: {outcome.twice}", flush=True)
                failed += not outcome.ok
        finally:
            if server is not None:
                server.stop()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
