"""The wheel a user installs: every package in it, no generic top-level names, every extra.

The release artifacts are built once per session with ``python -m build`` (an sdist, and the
wheel from it); they must pass ``twine check`` and carry LICENSE, NOTICE and the one version
(``deltalog.__version__``). ``test_wheel_*`` read its file list;
``test_installed_wheel*`` install it into new virtualenvs (no extras; spark; s3, gcs and azure
added one at a time to a third) and run ``tests/installed/smoke.py`` there from a directory
outside the source tree, so nothing can be imported from the checkout. The Spark line comes from
the same constraints file as the development environment (pip's cache makes the installs cheap
after the first).
"""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
import tarfile
import tomllib
import venv
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
INSTALLED = Path(__file__).resolve().parent / "installed"
CONSTRAINTS = ROOT / "scripts" / "constraints" / "spark4.txt"

pytestmark = pytest.mark.packaging


def _run(argv: list[str], cwd: Path, timeout: float = 900, tmpdir: Path | None = None) -> str:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    if tmpdir is not None:
        env["TMPDIR"] = str(tmpdir)
    done = subprocess.run(
        argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )
    assert done.returncode == 0, f"{argv} failed:\n{done.stdout[-4000:]}\n{done.stderr[-4000:]}"
    return done.stdout


@pytest.fixture(scope="session")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The release artifacts, as ``python -m build`` makes them: an sdist, and the wheel built
    from that sdist (so a file the sdist lacks is missing from the wheel too)."""
    out = tmp_path_factory.mktemp("dist")
    # build makes an isolated environment with the build-system requirements of pyproject.toml.
    _run([sys.executable, "-m", "build", "--outdir", str(out), str(ROOT)], cwd=out)
    yield out


@pytest.fixture(scope="session")
def wheel(dist: Path) -> Iterator[Path]:
    (found,) = dist.glob("deltalog-*.whl")
    yield found


@pytest.fixture(scope="session")
def sdist(dist: Path) -> Iterator[Path]:
    (found,) = dist.glob("deltalog-*.tar.gz")
    yield found


def _source_version() -> str:
    """``deltalog.__version__`` as the source says it (read, not imported)."""
    tree = ast.parse((ROOT / "deltalog" / "__init__.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and [getattr(t, "id", "") for t in node.targets] == [
            "__version__"
        ]:
            assert isinstance(node.value, ast.Constant)
            return str(node.value.value)
    raise AssertionError("deltalog/__init__.py sets no __version__")


def test_the_version_has_one_source() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "version" not in project["project"], "pyproject.toml must not spell the version"
    assert project["project"]["dynamic"] == ["version"]
    dynamic = project["tool"]["setuptools"]["dynamic"]["version"]
    assert dynamic == {"attr": "deltalog.__version__"}
    changelog = (ROOT / "CHANGELOG.md").read_text()
    assert f"\n## {_source_version()} " in changelog or f"\n## {_source_version()}\n" in changelog


def test_artifacts_carry_the_version_license_and_notice(wheel: Path, sdist: Path) -> None:
    version = _source_version()
    assert wheel.name.startswith(f"deltalog-{version}-") and sdist.name == (
        f"deltalog-{version}.tar.gz"
    )
    names = zipfile.ZipFile(wheel).namelist()
    info = f"deltalog-{version}.dist-info"
    for name in ("LICENSE", "NOTICE"):
        assert f"{info}/licenses/{name}" in names, sorted(n for n in names if "dist-info" in n)
        shipped = zipfile.ZipFile(wheel).read(f"{info}/licenses/{name}")
        assert shipped == (ROOT / name).read_bytes()
    metadata = zipfile.ZipFile(wheel).read(f"{info}/METADATA").decode()
    assert f"\nVersion: {version}\n" in metadata
    assert "\nLicense-Expression: Apache-2.0\n" in metadata
    assert "License-File: LICENSE" in metadata and "License-File: NOTICE" in metadata
    assert "Description-Content-Type: text/markdown" in metadata
    with tarfile.open(sdist) as archive:
        members = set(archive.getnames())
        top = f"deltalog-{version}"
        for name in ("LICENSE", "NOTICE", "CHANGELOG.md", "README.md", "pyproject.toml"):
            assert f"{top}/{name}" in members, name
        license_file = archive.extractfile(f"{top}/LICENSE")
        assert license_file is not None and license_file.read() == (ROOT / "LICENSE").read_bytes()
    assert "Apache License" in (ROOT / "LICENSE").read_text()
    assert "Version 2.0, January 2004" in (ROOT / "LICENSE").read_text()
    assert "END OF TERMS AND CONDITIONS" in (ROOT / "LICENSE").read_text()


def test_artifacts_pass_twine_check(dist: Path) -> None:
    files = sorted(str(p) for p in dist.iterdir())
    assert len(files) == 2, files
    out = _run([sys.executable, "-m", "twine", "check", "--strict", *files], cwd=dist)
    assert out.count("PASSED") == 2, out


def _source_packages() -> set[str]:
    """Every package under deltalog/ in the source tree, following the symlinked folders."""
    found = set()
    for directory, _dirs, files in os.walk(ROOT / "deltalog", followlinks=True):
        if "__pycache__" in directory:
            continue
        if any(f.endswith(".py") for f in files):
            relative = Path(directory).relative_to(ROOT)
            found.add(".".join(relative.parts))
    return found


def test_wheel_has_every_package_and_module(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    packages = _source_packages()
    assert {"deltalog", "deltalog.logstores", "deltalog.checkpoints", "deltalog.spark"} <= packages
    for package in sorted(packages):
        init = package.replace(".", "/") + "/__init__.py"
        assert init in names, f"{package} is missing from the wheel (or has no __init__.py)"
    for directory, _dirs, files in os.walk(ROOT / "deltalog", followlinks=True):
        for f in files:
            if f.endswith(".py") or f == "py.typed":
                relative = (Path(directory) / f).relative_to(ROOT).as_posix()
                assert relative in names, f"{relative} is missing from the wheel"


def test_wheel_installs_no_generic_top_level_names(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    tops = {n.split("/")[0] for n in names if not n.split("/")[0].endswith(".dist-info")}
    assert tops == {"deltalog"}
    metadata = next(n for n in names if n.endswith("dist-info/METADATA"))
    text = zipfile.ZipFile(wheel).read(metadata).decode()
    assert "Provides-Extra: spark" in text
    spark_requires = [line for line in text.splitlines() if "pyspark" in line]
    pins = [line for line in spark_requires if "==" in line.split(";")[0]]
    assert spark_requires and not pins, spark_requires
    assert not [
        line for line in text.splitlines() if "delta-spark" in line and 'extra == "spark"' in line
    ]


def _install_and_smoke(pip: list[str], python: str, target: str, extras: str, tmp: Path) -> None:
    """Install ``target`` with ``pip`` and run the smoke test for ``extras`` (comma-separated)."""
    outside = tmp / "elsewhere"
    outside.mkdir(exist_ok=True)
    _run([*pip, target], cwd=outside)
    scratch = tmp / "tmp"
    scratch.mkdir(exist_ok=True)
    out = _run([python, str(INSTALLED / "smoke.py"), extras], cwd=outside, tmpdir=scratch)
    assert out.strip().endswith("smoke passed"), out
    assert not list(scratch.iterdir())  # the smoke test's tables are removed


def test_installed_wheel_cloud_extras_one_at_a_time(wheel: Path, tmp_path: Path) -> None:
    """s3, then gcs, then azure into one virtualenv: each extra brings its store's SDK and
    nothing else (the smoke test checks that the stores not yet installed name their extra)."""
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True)
    python = str(env_dir / "bin" / "python")
    pip = [python, "-m", "pip", "install", "-q", "-c", str(CONSTRAINTS)]
    installed: list[str] = []
    for extra in ("s3", "gcs", "azure"):
        installed.append(extra)
        _install_and_smoke(pip, python, f"{wheel}[{extra}]", ",".join(installed), tmp_path)
    listed = _run([python, "-m", "pip", "list", "--format=freeze"], cwd=tmp_path).lower()
    assert "delta-spark" not in listed and "pyspark" not in listed and "pandas" not in listed


@pytest.mark.parametrize("extra", ["none", "spark"])
def test_installed_wheel(extra: str, wheel: Path, tmp_path: Path) -> None:
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True)
    python = str(env_dir / "bin" / "python")
    pip = [python, "-m", "pip", "install", "-q", "-c", str(CONSTRAINTS)]
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    if extra == "spark":
        # First deltalog on the driver only: the executors' workers must get a clear error.
        _run([*pip, "pyspark", "pandas", "pyarrow>=15", "orjson>=3.9"], cwd=outside)
        driver_only = tmp_path / "driver-only"
        _run([*pip, "--no-deps", "--target", str(driver_only), str(wheel)], cwd=outside)
        out = _run(
            [python, str(INSTALLED / "driver_only.py"), str(driver_only), str(tmp_path / "t0")],
            cwd=outside,
        )
        assert "ok executors without deltalog" in out
    target = str(wheel) if extra == "none" else f"{wheel}[{extra}]"
    _run([*pip, target], cwd=outside)
    if extra == "none":
        # An unrelated PyPI package named 'checkpoints' beside deltalog changes nothing.
        _run([*pip, "--no-deps", "checkpoints"], cwd=outside)
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    out = _run([python, str(INSTALLED / "smoke.py"), extra], cwd=outside, tmpdir=scratch)
    assert out.strip().endswith("smoke passed"), out
    assert not list(scratch.iterdir())  # the smoke test's tables are removed
    listed = _run([python, "-m", "pip", "list", "--format=freeze"], cwd=outside).lower()
    assert "delta-spark" not in listed  # no extra brings delta-spark
    if extra != "spark":
        assert "pyspark" not in listed and "pandas" not in listed


def _tree_copy(dest: Path) -> Path:
    """The source tree's files as git sees them (committed or not, ignored ones left out)."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout.decode()
    for name in filter(None, listed.split("\0")):
        source = ROOT / name
        if not source.exists() and not source.is_symlink():
            continue  # deleted in the work tree, not yet committed
        target = dest / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_symlink():  # deltalog/logstores -> ../logstores stays a link
            target.symlink_to(os.readlink(source))
        else:
            shutil.copy2(source, target)
    return dest


def _install_blocks() -> list[Any]:
    from docsnippets import all_blocks

    return [
        pytest.param(block, id=block.where) for block in all_blocks() if "install" in block.words
    ]


@pytest.mark.parametrize("block", _install_blocks())
def test_documented_install_commands_work(block: Any, tmp_path: Path) -> None:
    """The README's install commands, run as written in a clone, give a working deltalog."""
    clone = _tree_copy(tmp_path / "deltalog")
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PATH"] = f"{env_dir / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    env["PIP_CONSTRAINT"] = str(CONSTRAINTS)  # the Spark line, should a block install it
    done = subprocess.run(
        ["bash", "-e", "-o", "pipefail", "-c", block.code],
        cwd=clone,
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,
        check=False,
    )
    assert done.returncode == 0, f"{block.where}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    check = "import deltalog, pyarrow; print(deltalog.__file__, deltalog.__version__)"
    shown = subprocess.run(
        [str(env_dir / "bin" / "python"), "-c", check],
        cwd=outside,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "site-packages" in shown and _source_version() in shown, shown
    subprocess.run([str(env_dir / "bin" / "deltalog"), "--help"], cwd=outside, env=env, check=True,
                   capture_output=True)  # fmt: skip
