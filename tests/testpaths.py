"""Where the test suite's files are, for tests in any folder of ``tests/``."""

from pathlib import Path

TESTS_DIR = Path(__file__).resolve().parent
REPO_ROOT = TESTS_DIR.parent
GOLDEN_DIR = REPO_ROOT.parent / "shared" / "delta-golden"


def share_test_modules() -> None:
    """Put every folder of ``tests/`` on ``sys.path``, for tests that import another's helpers.

    Test modules are imported by their bare name (basenames are unique across ``tests/``), so
    ``from test_file_stats import SCHEMA`` works from any folder, and in child processes started
    with "spawn", which inherit ``sys.path``.
    """
    import sys

    for folder in [TESTS_DIR, *sorted(p for p in TESTS_DIR.iterdir() if p.is_dir())]:
        shares = folder == TESTS_DIR or any(folder.glob("test_*.py"))
        if shares and str(folder) not in sys.path:
            sys.path.append(str(folder))
