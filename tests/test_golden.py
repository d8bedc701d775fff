"""deltalog against the delta-spark golden tables in /work/shared/delta-golden.

Expectations come from ``golden_manifest.GOLDEN``. Every manifest entry is one test case named
after its table. Where delta-rs (deltalake 1.6.6) can load a table, the live file set must also
equal delta-rs's; where it cannot, the manifest alone decides.
"""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

GOLDEN_DIR = Path(__file__).resolve().parents[2] / "shared" / "delta-golden"

if not GOLDEN_DIR.is_dir():
    pytest.skip(
        f"golden tables not found at {GOLDEN_DIR} (expected ../shared/delta-golden next to the "
        "repository)",
        allow_module_level=True,
    )

import deltalake  # noqa: E402
from deltalake.exceptions import DeltaError  # noqa: E402
from golden_manifest import GOLDEN  # noqa: E402

import deltalog  # noqa: E402

ERROR_KINDS: dict[str, type[deltalog.DeltaLogError]] = {
    "no_log": deltalog.TableNotFoundError,
    "version_gap": deltalog.VersionGapError,
    "missing_protocol": deltalog.MissingProtocolError,
    "missing_metadata": deltalog.MissingMetadataError,
    "unsupported_protocol": deltalog.UnsupportedFeatureError,
}

ALL_TABLES = sorted(GOLDEN)
CHECKPOINTED = sorted(k for k, v in GOLDEN.items() if "checkpoint_version" in v)


def _table_path(name: str) -> str:
    return str(GOLDEN_DIR / name)


def _deltalog_files(table: deltalog.DeltaTable, root: str) -> list[str]:
    """Absolute, decoded, normalized paths of deltalog's live files."""
    out = []
    for logged in table.files().column("path").to_pylist():
        if logged.startswith("file:"):  # absolute URI: file:/x, file:///x
            path = unquote(urlsplit(logged).path)
        elif "://" in logged:
            raise AssertionError(f"unexpected non-local data file path in a local table: {logged}")
        else:  # relative to the root (os.path.join keeps an absolute /x as is)
            path = os.path.join(root, unquote(logged))
        out.append(os.path.realpath(path))
    return sorted(out)


def _delta_rs_files(root: str, version: int | None = None) -> list[str] | None:
    """delta-rs's live files (absolute, normalized), or None when delta-rs cannot load them."""
    try:
        table = deltalake.DeltaTable(root, version=version)
        uris = table.file_uris()
    except DeltaError:
        return None
    out = []
    for uri in uris:
        path = unquote(urlsplit(uri).path) if uri.startswith("file:") else uri
        out.append(os.path.realpath(path))
    return sorted(out)


def _diff(ours: list[str], theirs: list[str]) -> str:
    only_ours = sorted(set(ours) - set(theirs))
    only_theirs = sorted(set(theirs) - set(ours))
    return (
        f"deltalog has {len(ours)} files, delta-rs {len(theirs)}; "
        f"only in deltalog: {only_ours[:5]}; only in delta-rs: {only_theirs[:5]}"
    )


# --------------------------------------------------------------------------- the manifest


def test_manifest_covers_every_table_and_top_level_folder() -> None:
    with_log = {
        p.parent.relative_to(GOLDEN_DIR).as_posix()
        for p in GOLDEN_DIR.rglob("_delta_log")
        if p.is_dir()
    }
    top_level = {p.name for p in GOLDEN_DIR.iterdir() if p.is_dir()}
    assert with_log, f"no _delta_log folder found under {GOLDEN_DIR}"
    missing = sorted((with_log | top_level) - set(GOLDEN))
    assert not missing, f"folders under {GOLDEN_DIR} with no manifest entry: {missing}"
    stale = sorted(name for name in GOLDEN if not (GOLDEN_DIR / name).is_dir())
    assert not stale, f"manifest entries with no folder: {stale}"


@pytest.mark.parametrize("name", [pytest.param(n, id=n) for n in ALL_TABLES])
def test_manifest_entry_is_well_formed(name: str) -> None:
    entry = GOLDEN[name]
    assert entry["expect"] in ("ok", "error")
    if entry["expect"] == "ok":
        assert isinstance(entry["version"], int)
        assert isinstance(entry["num_files"], int)
        if "checkpoint_version" in entry:
            assert isinstance(entry["checkpoint_version"], int)
            assert entry["checkpoint_version"] <= entry["version"]
    else:
        assert entry["error_kind"] in ERROR_KINDS, f"unknown error_kind {entry['error_kind']!r}"


# --------------------------------------------------------------------------- latest snapshot


@pytest.mark.parametrize("name", [pytest.param(n, id=n) for n in ALL_TABLES])
def test_golden_table(name: str) -> None:
    entry = GOLDEN[name]
    root = _table_path(name)

    if entry["expect"] == "error":
        expected = ERROR_KINDS[str(entry["error_kind"])]
        with pytest.raises(expected):
            deltalog.DeltaTable(root)
        return

    table = deltalog.DeltaTable(root)
    assert table.version() == entry["version"]
    assert table.files().num_rows == entry["num_files"]
    assert table.snapshot.checkpoint_version == entry.get("checkpoint_version")

    theirs = _delta_rs_files(root)
    if theirs is None:
        return  # delta-rs cannot load this table; the manifest is the reference
    ours = _deltalog_files(table, root)
    assert ours == theirs, _diff(ours, theirs)


# --------------------------------------------------------------------------- time travel


@pytest.mark.parametrize("name", [pytest.param(n, id=n) for n in CHECKPOINTED])
def test_every_version_matches_delta_rs(name: str) -> None:
    entry = GOLDEN[name]
    assert entry["expect"] == "ok"
    root = _table_path(name)
    latest, checkpoint = entry["version"], entry["checkpoint_version"]
    assert isinstance(latest, int)
    assert isinstance(checkpoint, int)

    compared, not_rebuildable = [], []
    for version in range(latest + 1):
        try:
            table = deltalog.DeltaTable(root, version=version)
        except deltalog.VersionNotFoundError:
            not_rebuildable.append(version)
            continue
        assert table.version() == version
        theirs = _delta_rs_files(root, version)
        if theirs is None:
            continue
        ours = _deltalog_files(table, root)
        assert ours == theirs, f"version {version}: {_diff(ours, theirs)}"
        compared.append(version)

    # The checkpoint and every commit after it are on disk, so those versions must rebuild.
    assert not [v for v in not_rebuildable if v >= checkpoint], (
        f"versions {not_rebuildable} could not be rebuilt (checkpoint at {checkpoint})"
    )
    if not compared:
        pytest.skip(f"delta-rs cannot load any version of {name}; only deltalog was exercised")
