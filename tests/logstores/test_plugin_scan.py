"""Plugin stores are found through their entry points; without any, importlib.metadata stays out."""

from __future__ import annotations

import sys
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from deltalog.logstores import MemoryLogStore, registry
from deltalog.logstores.plugin_scan import entry_points, may_declare

GROUP = registry.ENTRY_POINT_GROUP


def _dist(site: Path, name: str, entry_points_txt: str | None) -> None:
    info = site / f"{name}-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
    if entry_points_txt is not None:
        (info / "entry_points.txt").write_text(entry_points_txt)


@pytest.fixture
def fresh_plugins() -> Iterator[None]:
    registry._plugins.cache_clear()
    yield
    registry._plugins.cache_clear()


def test_nothing_declared_is_answered_without_importlib_metadata(tmp_path: Path) -> None:
    _dist(tmp_path, "plain", None)
    _dist(tmp_path, "tool", "[console_scripts]\ntool = tool:main\n")
    (tmp_path / "old.egg-info").write_text("Name: old\n")  # a single-file egg-info
    assert not may_declare(GROUP, [str(tmp_path), str(tmp_path / "absent")])


def test_a_declaring_distribution_or_unreadable_metadata_means_a_full_scan(tmp_path: Path) -> None:
    _dist(tmp_path / "site", "plug", f"[{GROUP}]\nmine = plug:Store\n")
    assert may_declare(GROUP, [str(tmp_path / "site")])
    with zipfile.ZipFile(tmp_path / "bundle.zip", "w") as z:
        z.writestr("x.py", "")
    assert may_declare(GROUP, [str(tmp_path / "bundle.zip")])  # metadata may be inside
    (tmp_path / "thing.egg").mkdir()
    assert may_declare(GROUP, [str(tmp_path / "thing.egg")])


def test_a_finder_of_other_distributions_means_a_full_scan(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    class Finder:
        @staticmethod
        def find_spec(*args: object) -> None:
            return None

        @staticmethod
        def find_distributions(*args: object) -> list[object]:
            return []

    assert not may_declare(GROUP, [str(tmp_path)])
    monkeypatch.setattr(sys, "meta_path", [*sys.meta_path, Finder])
    assert may_declare(GROUP, [str(tmp_path)])


def test_a_plugin_store_is_found_and_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fresh_plugins: None
) -> None:
    site = tmp_path / "site"
    _dist(site, "plug", f"[{GROUP}]\nplugtest = plug_store_mod:Store\n")
    (site / "plug_store_mod.py").write_text(
        "from deltalog.logstores import MemoryLogStore\n"
        "class Store:\n"
        "    @staticmethod\n"
        "    def from_uri(uri, options):\n"
        "        return MemoryLogStore(), 'memory://plug-' + uri.split('://')[1]\n"
    )
    monkeypatch.syspath_prepend(str(site))
    assert [ep.name for ep in entry_points(group=GROUP)] == ["plugtest"]
    store, root = registry.open_store("plugtest://t")
    assert isinstance(store, MemoryLogStore)
    assert root == "memory://plug-t"
    assert not registry.is_builtin("plugtest://t")


def test_without_plugins_the_built_in_stores_serve(fresh_plugins: None) -> None:
    assert entry_points(group="deltalog.no-such-group-anywhere") == ()
    assert registry.is_builtin("file:///tmp/x")
