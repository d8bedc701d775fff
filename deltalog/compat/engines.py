"""The engines ``compat`` asks, each in its own process, and how to run one.

An :class:`Engine` knows whether it can run here (:meth:`Engine.unavailable` says why not and
how to get it) and the command that observes a list of tables: the command reads a request
file and writes a results file (the format of :mod:`deltalog.compat.probe_main`). Running it
in its own process contains a crash: :func:`run_engine` reports it with the engine's name, its
exit status and the tail of its stderr, never a traceback of ours.
"""

from __future__ import annotations

import importlib.util
import os
import shlex
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as dist_version
from pathlib import Path
from typing import Any

import orjson

#: Seconds one engine may take for all tables of a run (``DELTALOG_COMPAT_TIMEOUT``).
TIMEOUT = float(os.environ.get("DELTALOG_COMPAT_TIMEOUT", "1800"))
_TAIL = 1500


def _version_of(dist: str) -> str:
    try:
        return dist_version(dist)
    except PackageNotFoundError:
        return "?"


class Engine:
    """One engine; subclasses say how to run it."""

    name: str = ""
    #: What to install when the engine is missing.
    how_to_get: str = ""
    #: Whether its probe can append (``{"uri", "append": true}`` requests): the write probe.
    can_append: bool = False

    def unavailable(self) -> str | None:
        """Why the engine cannot run here (with how to get it), or ``None``."""
        return None

    def describe(self) -> str:
        """The engine and its version, for the report."""
        return self.name

    def command(self, request: Path, output: Path) -> list[str]:
        """The command line that observes ``request``'s tables into ``output``."""
        raise NotImplementedError

    def environment(self) -> dict[str, str]:
        """Environment of the engine's process."""
        return dict(os.environ)

    def run_here(
        self, tables: Sequence[Mapping[str, Any]], storage_options: Mapping[str, str]
    ) -> list[dict[str, Any]] | None:
        """Observe ``tables`` in this process instead (``None``: run :meth:`command`)."""
        return None


class PythonEngine(Engine):
    """deltalog or delta-rs, observed by :mod:`deltalog.compat.probe_main`."""

    can_append = True

    def __init__(self, name: str, module: str, dist: str, how_to_get: str) -> None:
        self.name = name
        self.module = module
        self.dist = dist
        self.how_to_get = how_to_get

    def unavailable(self) -> str | None:
        """``None`` when the engine's Python package is importable."""
        if importlib.util.find_spec(self.module) is None:
            return f"the {self.module} package is not installed: {self.how_to_get}"
        return None

    def describe(self) -> str:
        """E.g. ``delta-rs (deltalake 1.6.6)``."""
        return f"{self.name} ({self.dist} {_version_of(self.dist)})"

    def command(self, request: Path, output: Path) -> list[str]:
        """``python -m deltalog.compat.probe_main REQUEST OUTPUT``."""
        return [sys.executable, "-m", "deltalog.compat.probe_main", str(request), str(output)]

    def environment(self) -> dict[str, str]:
        """This process's environment, with deltalog importable from where it was loaded."""
        env = dict(os.environ)
        root = str(Path(__file__).resolve().parents[2])
        env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
        return env


class CommandEngine(Engine):
    """An engine given as a command line.

    An engine given as a command line (``{request}`` and ``{output}`` are filled in): a
    user's own engine, or a test's fake one.
    """

    def __init__(
        self, name: str, argv: Sequence[str], env: Mapping[str, str] | None = None
    ) -> None:
        self.name = name
        self.argv = list(argv)
        self.env = dict(env or {})

    def command(self, request: Path, output: Path) -> list[str]:
        """The given command with the file names filled in."""
        return [a.format(request=request, output=output) for a in self.argv]

    def environment(self) -> dict[str, str]:
        """This process's environment plus the given variables."""
        return {**os.environ, **self.env}

    @classmethod
    def parse(cls, spec: str) -> CommandEngine:
        """``NAME=COMMAND LINE`` (shell words)."""
        name, sep, line = spec.partition("=")
        if not sep or not name.strip() or not line.strip():
            from deltalog.errors import InvalidInputError

            raise InvalidInputError(f"--engine-command expects NAME=COMMAND, got {spec!r}")
        return cls(name.strip(), shlex.split(line))


@dataclass
class EngineRun:
    """What one engine's process produced: results, or why there are none."""

    engine: Engine
    results: list[dict[str, Any]] = field(default_factory=list)
    crash: str | None = None


def run_engine(
    engine: Engine,
    tables: Sequence[Mapping[str, Any]],
    storage_options: Mapping[str, str] | None = None,
    timeout: float = TIMEOUT,
    extra: Mapping[str, Any] | None = None,
) -> EngineRun:
    """Run ``engine`` once over all ``tables`` (``{"uri", "versions"}``)."""
    try:
        here = engine.run_here(tables, dict(storage_options or {}))
    except Exception as exc:  # an in-process engine failed as a whole: a crash, named
        return EngineRun(engine, crash=f"failed in this process: {type(exc).__name__}: {exc}")
    if here is not None:
        return EngineRun(engine, here)
    with tempfile.TemporaryDirectory(prefix="deltalog-compat-") as work:
        request = Path(work) / "request.json"
        output = Path(work) / "results.json"
        body = {
            "engine": engine.name,
            "tables": list(tables),
            "storage_options": dict(storage_options or {}),
            **(extra or {}),
        }
        request.write_bytes(orjson.dumps(body))
        try:
            argv = engine.command(request, output)
        except Exception as exc:
            return EngineRun(engine, crash=f"could not be set up: {type(exc).__name__}: {exc}")
        try:
            done = subprocess.run(
                argv,
                env=engine.environment(),
                capture_output=True,
                timeout=timeout,
                check=False,
                stdin=subprocess.DEVNULL,
            )
        except subprocess.TimeoutExpired:
            return EngineRun(engine, crash=f"no answer within {timeout:.0f} s")
        except OSError as exc:
            return EngineRun(engine, crash=f"could not start: {exc}")
        tail = " ".join(done.stderr.decode(errors="replace")[-_TAIL:].split())
        if done.returncode != 0:
            return EngineRun(engine, crash=f"exit status {done.returncode}: {tail}")
        try:
            answer = orjson.loads(output.read_bytes())
            results = list(answer["results"])
        except (OSError, orjson.JSONDecodeError, KeyError, TypeError) as exc:
            return EngineRun(engine, crash=f"no readable results ({exc}): {tail}")
        return EngineRun(engine, results)
