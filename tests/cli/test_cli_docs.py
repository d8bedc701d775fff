"""docs/cli.md's examples are real: each ``$ deltalog ...`` block is run on the tour's table.

The page shows every command on the table ``examples/cli_tour.py`` builds. Each console block
marked ``<!-- run: tested-by tests/cli/test_cli_docs.py -->`` (every one of docs/cli.md, and
the ``package-zip`` transcript of docs/cluster.md) is run here on a fresh copy of that table;
its output must equal the page's once what differs from run to run is masked (times, ids, file
sizes, which depend on the pyarrow version) and runs of spaces are collapsed (the widths follow
the sizes). The page's bash blocks marked so run with ``bash`` in the tour's directory.

When an output changes, regenerate the page's transcripts from a real run:
``python examples/cli_tour.py /tmp/tour`` prints every command with its output.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
from docsnippets import Block, blocks, run_shell, shell_environment

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "cli.md"
PAGES = [PAGE, ROOT / "docs" / "cluster.md"]
HERE = "tests/cli/test_cli_docs.py"
sys.path.insert(0, str(ROOT / "examples"))

import cli_tour  # noqa: E402

_MASKS = [
    (re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}Z"), "<time>"),
    (re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"), "<uuid>"),
    (re.compile(r"\d+(\.\d)? (B|KiB|MiB|GiB)\b"), "<size>"),
    (re.compile(r"\b\d{1,3}(,\d{3})+\b|\b\d{3,}\b"), "<n>"),
    (re.compile(r"[ \t]+"), " "),
]


def _mask(text: str, root: Path) -> str:
    text = text.replace(str(root), "<dir>")
    for pattern, replacement in _MASKS:
        text = pattern.sub(replacement, text)
    return "\n".join(line.rstrip() for line in text.strip().splitlines())


def _tested_here(page: Path, language: str) -> list[Block]:
    return [b for b in blocks(page) if b.language == language and b.tested_by == HERE]


def _examples(pages: list[Path]) -> list[tuple[str, str]]:
    examples = []
    for page in pages:
        for block in _tested_here(page, "console"):
            command, _, output = block.code.partition("\n")
            assert command.startswith("$ deltalog "), f"{block.where}: {command}"
            examples.append((command[2:], output))
    return examples


def test_every_transcript_of_the_page_is_tested_here() -> None:
    # An unmarked one would be run by the docs runner, in a directory without the tour's table.
    unmarked = [b.where for b in blocks(PAGE) if b.language == "console" and b.tested_by != HERE]
    assert not unmarked, f"mark them <!-- run: tested-by {HERE} -->: {unmarked}"


def test_the_page_shows_every_tour_command() -> None:
    shown = [command for command, _ in _examples([PAGE])]
    assert shown == cli_tour.COMMANDS


@pytest.mark.parametrize(("command", "output"), _examples(PAGES), ids=lambda v: str(v)[:60])
def test_example_output_is_what_the_command_prints(
    command: str, output: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cli_tour.build(tmp_path)
    monkeypatch.chdir(tmp_path)
    status, printed = cli_tour.run(command)
    expected_status = 0
    match = re.search(r"^\(exit status (\d+)\)$", output, re.M)
    if match:
        expected_status = int(match.group(1))
        output = output[: match.start()]
    assert status == expected_status
    shown = _mask(output.replace("/tmp/tour", str(tmp_path)), tmp_path)
    assert _mask(printed, tmp_path) == shown, (
        "the page's output is not what the command prints now; regenerate it with "
        "python examples/cli_tour.py /tmp/tour"
    )


def test_the_exit_status_example_runs(tmp_path: Path) -> None:
    (example,) = _tested_here(PAGE, "bash")
    env = shell_environment(tmp_path / "shell")
    tour, empty = tmp_path / "tour", tmp_path / "empty"
    tour.mkdir()
    empty.mkdir()
    cli_tour.build(tour)
    healthy = run_shell(example.code, tour, env)
    assert healthy.returncode == 0, healthy.stderr
    assert "0 errors, 0 warnings" in healthy.stdout
    assert "needs attention" not in healthy.stdout
    missing = run_shell(example.code, empty, env)  # no table there: exit status 2
    assert missing.returncode == 0, missing.stderr
    assert "events needs attention (exit status 2)" in missing.stdout
