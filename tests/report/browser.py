"""Headless Chromium for the report's tests: found, or installed once when missing.

Debian's ``chromium`` is not on a fresh machine. ``scripts/test.sh`` installs it (as root,
``apt-get install -y chromium``) before the tests; :func:`chromium` does the same when a test
needs it and it is still missing, and otherwise skips, or fails under
``DELTALOG_REQUIRE_SERVERS=1``. It is started with the flags this machine needs: no sandbox
as root, and no background networking (the network is closed; Chromium would keep trying).
"""

from __future__ import annotations

import os
import shutil
import struct
import subprocess
import zlib
from pathlib import Path

import pytest

NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
)


def _find() -> str | None:
    for name in NAMES:
        found = shutil.which(name)
        if found:
            return found
    return None


def _install() -> str:
    """``apt-get install -y chromium`` (then with ``apt-get update`` first); what it said."""
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    said = ""
    for commands in (
        [["apt-get", "install", "-y", "-q", "chromium"]],
        [["apt-get", "update", "-q"], ["apt-get", "install", "-y", "-q", "chromium"]],
    ):
        for command in commands:
            proc = subprocess.run(
                command, capture_output=True, text=True, env=env, timeout=900, check=False
            )
            said = (proc.stdout + proc.stderr)[-2000:]
            if proc.returncode:
                break
        if _find():
            return said
    return said


def chromium() -> str:
    """The Chromium executable; installed when missing (root with apt-get), else skip/fail."""
    found = _find()
    if found is None and os.geteuid() == 0 and shutil.which("apt-get"):
        said = _install()
        found = _find()
        why = f"apt-get install -y chromium did not give a chromium: {said}"
    else:
        why = "no chromium, and it cannot be installed here (needs root and apt-get)"
    if found is None:
        if os.environ.get("DELTALOG_REQUIRE_SERVERS") == "1":
            pytest.fail(why)
        pytest.skip(why)
    return found


def run(executable: str, profile: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Run headless Chromium with a fresh profile directory."""
    return subprocess.run(
        [executable, *FLAGS, f"--user-data-dir={profile}", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def png_facts(data: bytes) -> tuple[int, int, int]:
    """Width, height and the number of distinct pixel bytes of a PNG (8-bit RGB/RGBA)."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    at = 8
    width = height = 0
    idat = b""
    while at < len(data):
        (length,) = struct.unpack(">I", data[at : at + 4])
        kind = data[at + 4 : at + 8]
        body = data[at + 8 : at + 8 + length]
        if kind == b"IHDR":
            width, height = struct.unpack(">II", body[:8])
        elif kind == b"IDAT":
            idat += body
        at += 12 + length
    pixels = zlib.decompress(idat)
    return width, height, len(set(pixels[: 4 * 1024 * 1024]))
