"""docs/compat.md's list of known limitations is deltalog.compat.limits.KNOWN."""

from __future__ import annotations

import re
from pathlib import Path

from deltalog.compat.limits import KNOWN

PAGE = Path(__file__).resolve().parents[2] / "docs" / "compat.md"


def test_the_docs_list_every_known_limitation() -> None:
    text = PAGE.read_text()
    section = text.split("<!-- limitations:", 1)[1].split("\n\n", 1)[0]
    rows = re.findall(r"^\| (\S+) \| `([^`]+)` \| (.+) \|$", section, re.M)
    listed = {(engine, feature, reason) for engine, feature, reason in rows}
    # A limitation of any table (feature None) is listed with the feature `(any)`.
    assert listed == {(lim.engine, lim.feature or "(any)", lim.reason) for lim in KNOWN}
