"""docs/cli.md's examples are real: each ``$ deltalog ...`` block is run on the tour's table.

The page shows every command on the table ``examples/cli_tour.py`` builds. Each console block
is run here on a fresh copy of that table; its output must equal the page's once what differs
from run to run is masked (times, ids, file sizes, which depend on the pyarrow version) and
runs of spaces are collapsed (the widths follow the sizes).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "cli.md"
sys.path.insert(0, str(ROOT / "examples"))

import cli_tour  # noqa: E402

_BLOCK = re.compile(r"```console\n(.*?)```", re.S)
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


def _examples() -> list[tuple[str, str]]:
    examples = []
    for block in _BLOCK.findall(PAGE.read_text()):
        command, _, output = block.partition("\n")
        assert command.startswith("$ deltalog "), command
        examples.append((command[2:], output))
    return examples


def test_the_page_shows_every_tour_command() -> None:
    shown = [command for command, _ in _examples()]
    assert shown == cli_tour.COMMANDS


@pytest.mark.parametrize(("command", "output"), _examples(), ids=lambda v: str(v)[:60])
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
    assert _mask(printed, tmp_path) == _mask(output.replace("/tmp/tour", str(tmp_path)), tmp_path)
