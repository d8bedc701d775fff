"""Where the test suite's files are, for tests in any folder of ``tests/``."""

from pathlib import Path

TESTS_DIR = Path(__file__).resolve().parent
REPO_ROOT = TESTS_DIR.parent
GOLDEN_DIR = REPO_ROOT.parent / "shared" / "delta-golden"
