"""The code blocks of the README and the docs, and how each one is run in CI.

Every fenced block in ``README.md``, ``CONTRIBUTING.md``, ``CHANGELOG.md`` and ``docs/**/*.md``
must name its language. ``python`` and ``bash`` (``sh``, ``shell``) blocks are code and run;
``console`` blocks are shell transcripts (``$ command`` lines, then output) whose commands run;
``text``, ``toml``, ``json``, ``yaml``, ``ini`` and ``csv`` blocks are data or output, never run,
so they hold no ``deltalog`` command (one is always run, or tested by a named test); commands
for places CI does not have (a cluster's image, a remote master) may stand in a text block.

An HTML comment on the line right before a fence (invisible on GitHub and in the site) says
what a block needs, as space-separated words:

``<!-- run: spark -->``
    Needs PySpark (the block starts its own ``SparkSession``); the page runs in the Spark tests
    (``pytest -m spark``), on both Spark lines.
``<!-- run: s3 -->`` (``gcs``, ``azure``)
    Needs that object store: the page runs against the test server (moto, our GCS server,
    Azurite), reached through the SDKs' usual environment variables (``AWS_ENDPOINT_URL``,
    ``STORAGE_EMULATOR_HOST``, ``AZURE_STORAGE_CONNECTION_STRING``), with every bucket or
    container the page names created first. The block is run as written.
``<!-- run: install -->``
    An install command: ``tests/test_packaging.py`` runs it in a fresh virtualenv, in a copy
    of the source tree (it builds and installs the package, so not in the page's run).
``<!-- run: tested-by tests/cli/test_cli_docs.py -->``
    Another test runs (and checks the output of) this block; that file must exist and name
    the page.

The blocks of one page run in order, in one fresh working directory, python blocks in one
interpreter (as a reader pastes them one after another into one session), bash blocks with
``bash -e -o pipefail`` in the same directory, with ``python`` and ``deltalog`` on ``PATH``.
A block fails the test if it raises or exits non-zero. No block is skipped: a block the
runner cannot place (no language, an unknown language or word) fails
``tests/docs/test_snippets.py``.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

#: Languages whose blocks are code that runs.
PYTHON = {"python", "py"}
SHELL = {"bash", "sh", "shell"}
CONSOLE = {"console"}
#: Languages whose blocks are data or output, never run.
DATA = {"text", "toml", "json", "yaml", "ini", "csv", "output"}
#: Words a ``<!-- run: ... -->`` comment may hold.
NEEDS = {"spark", "s3", "gcs", "azure"}
MODES = {"install", "tested-by"}

_FENCE = re.compile(r"^(?P<indent> {0,3})(?P<fence>`{3,}|~{3,})(?P<info>[^`]*)$")
#: A line of a data block that is a ``deltalog`` command (``$ deltalog``, ``python -m deltalog``).
_COMMAND = re.compile(r"^(\$ )?(deltalog|python3? -m deltalog) ", re.M)
_DIRECTIVE = re.compile(r"^\s*<!--\s*run:\s*(?P<words>.*?)\s*-->\s*$")


@dataclass(frozen=True)
class Block:
    """One fenced code block.

    Attributes:
        page: The Markdown file, relative to the repository root.
        line: The 1-based line of the block's first code line.
        language: The info string's first word, lower case ('' when none).
        code: The block's text, dedented by the fence's indentation.
        words: The words of the ``<!-- run: ... -->`` comment before it.
    """

    page: str
    line: int
    language: str
    code: str
    words: tuple[str, ...] = ()

    @property
    def where(self) -> str:
        """``page:line`` for messages."""
        return f"{self.page}:{self.line}"

    @property
    def runs(self) -> bool:
        """Whether the page's own run executes this block."""
        return self.language in PYTHON | SHELL | CONSOLE and not (
            {"install", "tested-by"} & set(self.words)
        )

    @property
    def needs(self) -> frozenset[str]:
        """The fixtures the block needs (spark, s3, gcs, azure)."""
        return frozenset(self.words) & NEEDS

    @property
    def tested_by(self) -> str | None:
        """The test file named by ``tested-by``, if any."""
        if "tested-by" not in self.words:
            return None
        index = self.words.index("tested-by")
        return self.words[index + 1] if index + 1 < len(self.words) else ""

    def problems(self) -> list[str]:
        """Why the runner cannot place this block (empty when it can)."""
        out = []
        known = PYTHON | SHELL | CONSOLE | DATA
        if not self.language:
            out.append(f"{self.where}: a code block must name its language (```python, ...)")
        elif self.language not in known:
            out.append(f"{self.where}: unknown language {self.language!r} (known: {sorted(known)})")
        words = list(self.words)
        target = self.tested_by
        if target is not None:
            words.remove("tested-by")
            if target:
                words.remove(target)
            path = ROOT / target if target else None
            if path is None or not path.is_file():
                out.append(f"{self.where}: tested-by names no test file: {target!r}")
            elif Path(self.page).name not in path.read_text():
                out.append(f"{self.where}: {target} does not mention {Path(self.page).name}")
        unknown = set(words) - NEEDS - MODES
        if unknown:
            out.append(f"{self.where}: unknown run words {sorted(unknown)}")
        if self.words and self.language in DATA:
            out.append(f"{self.where}: a {self.language} block is never run; drop the comment")
        if self.language in DATA and _COMMAND.search(self.code):
            out.append(
                f"{self.where}: a deltalog command in a {self.language} block is never run; "
                "make it a bash or console block (run, or tested-by a test that runs it)"
            )
        return out


def pages() -> list[Path]:
    """Every Markdown page whose blocks must run: README, CONTRIBUTING, CHANGELOG, docs/."""
    found = [ROOT / n for n in ("README.md", "CONTRIBUTING.md", "CHANGELOG.md")]
    found += sorted((ROOT / "docs").rglob("*.md"))
    return [p for p in found if p.is_file()]


def blocks(page: Path) -> list[Block]:
    """The fenced code blocks of ``page``, in order."""
    lines = page.read_text().splitlines()
    relative = page.relative_to(ROOT).as_posix()
    out: list[Block] = []
    i = 0
    while i < len(lines):
        opening = _FENCE.match(lines[i])
        if opening is None:
            i += 1
            continue
        fence, indent = opening.group("fence"), len(opening.group("indent"))
        info = opening.group("info").strip()
        language = info.split()[0].lower().strip("{}.") if info else ""
        previous = lines[i - 1] if i else ""
        directive = _DIRECTIVE.match(previous)
        words = tuple(directive.group("words").split()) if directive else ()
        body: list[str] = []
        j = i + 1
        while j < len(lines):
            closing = lines[j].strip()
            if closing.startswith(fence[0] * len(fence)) and not closing.strip(fence[0]):
                break
            line = lines[j]
            body.append(line[indent:] if line[:indent].strip() == "" else line.lstrip())
            j += 1
        out.append(Block(relative, i + 2, language, "\n".join(body) + "\n", words))
        i = j + 1
    return out


def all_blocks() -> list[Block]:
    """The blocks of every page."""
    return [b for page in pages() for b in blocks(page)]


def bucket_names(code: str, need: str) -> set[str]:
    """Buckets (containers) a page's code names for one store, to create before it runs."""
    patterns = {
        "s3": r"s3a?://([a-z0-9][a-z0-9.-]+)/",
        "gcs": r"gs://([a-z0-9][a-z0-9._-]+)/",
        "azure": r"(?:az|abfss?)://([a-z0-9][a-z0-9-]+)[/@]",
    }
    return set(re.findall(patterns[need], code))


def command_dir(directory: Path) -> Path:
    """A ``bin`` folder in ``directory`` with ``python``, ``python3`` and ``deltalog``.

    Each is a small script that runs this interpreter (``sys.executable``), the way a reader's
    shell finds the Python that has deltalog. Not a symlink: a venv's Python reached through a
    link in another folder does not find its ``pyvenv.cfg`` and starts without the venv's
    packages (no pyarrow).
    """
    bin_dir = directory / "bin"
    bin_dir.mkdir(parents=True, exist_ok=True)
    shims = {
        "python": f'exec "{sys.executable}" "$@"',
        "python3": f'exec "{sys.executable}" "$@"',
        "deltalog": f'exec "{sys.executable}" -m deltalog "$@"',
    }
    for name, command in shims.items():
        shim = bin_dir / name
        shim.write_text(f"#!/bin/sh\n{command}\n")
        shim.chmod(0o755)
    return bin_dir


def shell_environment(directory: Path) -> dict[str, str]:
    """The environment a page's shell commands run in: ``command_dir`` first on ``PATH``.

    deltalog is imported from this checkout (``PYTHONPATH``), whatever is installed.
    """
    return {
        **os.environ,
        "PATH": f"{command_dir(directory)}{os.pathsep}{os.environ.get('PATH', '')}",
        "PYTHONPATH": str(ROOT),
    }


def run_shell(
    code: str, cwd: Path, env: dict[str, str], timeout: float = 600
) -> subprocess.CompletedProcess[str]:
    """Run a bash block as the docs runner does (``bash -e -o pipefail``); the finished process."""
    return subprocess.run(
        ["bash", "-e", "-o", "pipefail", "-c", code],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
