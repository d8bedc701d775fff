"""The report renders in a real browser: headless Chromium loads it, lays it out, and draws it.

Chromium's DOM after loading (``--dump-dom``) must hold the same commits and bins as the file,
the page must not try to load anything (a Content-Security-Policy violation would be logged),
and its screenshot must be a PNG of the window's size with more than a blank page in it. The
screenshot's path is printed and recorded as the test's ``screenshot`` property (in JUnit
XML); with ``DELTALOG_ARTIFACTS=DIR`` it is also copied there.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from browser import chromium, png_facts, run
from pageparse import having
from test_report import build_table

from deltalog.report import write_report

WIDTH, HEIGHT = 1280, 2400


@pytest.fixture(scope="module")
def browser() -> str:
    return chromium()


@pytest.fixture
def page(tmp_path: Path) -> Path:
    uri = build_table(tmp_path / "events")
    out = tmp_path / "report.html"
    write_report(uri, out)
    return out


def test_chromium_renders_the_report(
    browser: str,
    page: Path,
    tmp_path: Path,
    record_property: pytest.RecordProperty,
    capsys: pytest.CaptureFixture[str],
) -> None:
    html = page.read_text()
    dom = run(
        browser, tmp_path / "profile-dom", "--enable-logging=stderr", "--dump-dom", page.as_uri()
    )
    assert dom.returncode == 0, dom.stderr[-2000:]
    for cls in ("commit", "bin", "row", "card", "column"):
        assert len(having(dom.stdout, cls=cls)) == len(having(html, cls=cls)) > 0, cls
    assert "Refused to" not in dom.stderr  # no request the page's policy had to block
    shot = tmp_path / "report.png"
    taken = run(
        browser,
        tmp_path / "profile-shot",
        f"--window-size={WIDTH},{HEIGHT}",
        f"--screenshot={shot}",
        page.as_uri(),
    )
    assert taken.returncode == 0, taken.stderr[-2000:]
    data = shot.read_bytes()
    width, height, distinct = png_facts(data)
    assert (width, height) == (WIDTH, HEIGHT)
    assert distinct > 16, "the screenshot is (nearly) blank"
    record_property("screenshot", str(shot))
    artifacts = os.environ.get("DELTALOG_ARTIFACTS")
    if artifacts:
        Path(artifacts).mkdir(parents=True, exist_ok=True)
        shutil.copy(shot, Path(artifacts) / "report-screenshot.png")
    with capsys.disabled():
        print(f"\nreport screenshot: {shot} ({len(data):,} bytes, {width}x{height})")
