"""Run the code blocks of one Markdown page in order: ``python page_runner.py BLOCKS.json``.

Started by ``tests/docs/test_snippets.py`` in a fresh working directory. ``BLOCKS.json`` is a
list of ``{"where", "line", "page", "language", "code"}``. Python blocks run in one namespace
(tracebacks name the page and its line numbers; ``sys.argv`` is ``[""]`` as in an interactive
session, so a block that reads ``sys.argv[1]`` sees no argument), bash blocks with
``bash -e -o pipefail``, console blocks command by command (the ``$ `` lines). The first
failure stops the run with exit status 1 and names the block.
"""

from __future__ import annotations

import json
import subprocess
import sys
import traceback

PYTHON = {"python", "py"}


def _shell(code: str, where: str) -> None:
    print(f"[docs] {where} (bash)", file=sys.stderr, flush=True)
    done = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", code], check=False)
    if done.returncode:
        raise SystemExit(f"{where}: the bash block exited with status {done.returncode}")


def _console_commands(code: str) -> list[str]:
    """The commands of a transcript: ``$ `` lines, with their ``\\`` continuation lines."""
    commands: list[str] = []
    current: list[str] | None = None
    for line in code.splitlines():
        if current is not None:
            current.append(line)
        elif line.startswith("$ "):
            current = [line[2:]]
        if current is not None and not line.rstrip().endswith("\\"):
            commands.append("\n".join(current))
            current = None
    return commands


def main() -> None:
    """Run every block of the page; exit 1 at the first failure."""
    with open(sys.argv[1]) as f:
        blocks = json.load(f)
    namespace: dict[str, object] = {"__name__": "__main__"}
    sys.argv = [""]  # as in a Python session a reader pastes into, not this runner's arguments
    for block in blocks:
        where, language = block["where"], block["language"]
        if language in PYTHON:
            print(f"[docs] {where} (python)", file=sys.stderr, flush=True)
            source = "\n" * (block["line"] - 1) + block["code"]
            try:
                exec(compile(source, block["page"], "exec"), namespace)
            except BaseException:
                traceback.print_exc()
                raise SystemExit(f"{where}: the python block raised") from None
        elif language == "console":
            for command in _console_commands(block["code"]):
                _shell(command, where)
        else:
            _shell(block["code"], where)
    print("[docs] every block ran", file=sys.stderr, flush=True)


if __name__ == "__main__":
    main()
