"""Every code block of the README and the docs runs, as written (see ``tests/docsnippets.py``).

One test per page runs the page's blocks in order in a fresh directory, in a child process
(``tests/docs/page_runner.py``). A page with a ``<!-- run: spark -->`` block is marked
``spark`` (so it runs again on the second Spark line); one with ``s3``/``gcs``/``azure`` blocks
gets those test servers, reached through the SDKs' environment variables. Install blocks run in
``tests/test_packaging.py``. No block is skipped: ``test_every_block_can_be_placed`` fails on a
block the runner cannot place.
"""

from __future__ import annotations

import contextlib
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from docsnippets import ROOT, Block, all_blocks, blocks, bucket_names, pages, shell_environment

RUNNER = Path(__file__).resolve().parent / "page_runner.py"
PAGE_TIMEOUT = 900


def _page_params() -> list[Any]:
    params = []
    for page in pages():
        found = [b for b in blocks(page) if b.runs]
        if not found:
            continue
        needs = frozenset().union(*(b.needs for b in found))
        marks = [pytest.mark.spark] if "spark" in needs else []
        relative = page.relative_to(ROOT).as_posix()
        params.append(pytest.param(relative, id=relative, marks=marks))
    return params


def test_every_block_can_be_placed() -> None:
    found = all_blocks()
    assert len(found) >= 5, "no code blocks found: is the README there?"
    problems = [p for block in found for p in block.problems()]
    assert not problems, "\n".join(problems)


def test_every_install_block_is_run_by_the_packaging_test() -> None:
    installs = [b for b in all_blocks() if "install" in b.words]
    assert installs, "the README's install commands must run in CI (<!-- run: install -->)"
    for block in installs:
        assert block.language in ("bash", "sh", "shell"), block.where


def _store_environment(
    request: pytest.FixtureRequest, needs: set[str], code: str
) -> dict[str, str]:
    """Environment variables that point the SDKs at the test servers; buckets created."""
    env: dict[str, str] = {}
    if "s3" in needs:
        import boto3

        server = request.getfixturevalue("moto_server")
        env.update(
            AWS_ENDPOINT_URL=server.endpoint,
            AWS_ACCESS_KEY_ID="testing",
            AWS_SECRET_ACCESS_KEY="testing",
            AWS_REGION="us-east-1",
            AWS_DEFAULT_REGION="us-east-1",
        )
        s3 = boto3.client(
            "s3",
            endpoint_url=server.endpoint,
            region_name="us-east-1",
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
        )
        existing = {b["Name"] for b in s3.list_buckets().get("Buckets", [])}
        for bucket in bucket_names(code, "s3") - existing:
            s3.create_bucket(Bucket=bucket)
    if "gcs" in needs:
        from google.api_core.exceptions import Conflict
        from google.auth.credentials import AnonymousCredentials
        from google.cloud import storage

        server = request.getfixturevalue("gcs_server")
        env["STORAGE_EMULATOR_HOST"] = server.endpoint
        client = storage.Client(
            project="test",
            credentials=AnonymousCredentials(),
            client_options={"api_endpoint": server.endpoint},
        )
        for bucket in bucket_names(code, "gcs"):
            with contextlib.suppress(Conflict):
                client.create_bucket(bucket)
    if "azure" in needs:
        from azure.core.exceptions import ResourceExistsError
        from azure.storage.blob import BlobServiceClient
        from servers import harness

        from deltalog.logstores.azure import EMULATOR_KEY

        server = request.getfixturevalue("azurite_server")
        account = harness.AZURITE_ACCOUNT
        env["AZURE_STORAGE_CONNECTION_STRING"] = (
            f"DefaultEndpointsProtocol=http;AccountName={account};AccountKey={EMULATOR_KEY};"
            f"BlobEndpoint={server.endpoint}/{account};"
        )
        service = BlobServiceClient.from_connection_string(env["AZURE_STORAGE_CONNECTION_STRING"])
        for container in bucket_names(code, "azure"):
            with contextlib.suppress(ResourceExistsError):
                service.create_container(container)
    return env


def run_blocks(
    found: list[Block], tmp_path: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run ``found`` in order in a fresh directory under ``tmp_path``; the finished process."""
    work = tmp_path / "work"
    work.mkdir()
    spec = tmp_path / "blocks.json"
    spec.write_text(
        json.dumps(
            [
                {
                    "where": b.where,
                    "page": str(ROOT / b.page),
                    "line": b.line,
                    "language": b.language,
                    "code": b.code,
                }
                for b in found
            ]
        )
    )
    environment = {
        **shell_environment(tmp_path),
        "PYSPARK_PYTHON": sys.executable,
        "PYSPARK_DRIVER_PYTHON": sys.executable,
        "PYTHONWARNINGS": "error::DeprecationWarning:__main__",
        **(env or {}),
    }
    return subprocess.run(
        [sys.executable, str(RUNNER), str(spec)],
        cwd=work,
        env=environment,
        capture_output=True,
        text=True,
        timeout=PAGE_TIMEOUT,
        check=False,
    )


def test_blocks_get_this_python_and_no_arguments(tmp_path: Path) -> None:
    """``python`` and ``deltalog`` in a bash block are this interpreter, with its packages
    (pyarrow); a python block sees ``sys.argv == [""]``, as in a session a reader pastes into.
    """
    found = [
        Block("page.md", 1, "bash", "python -c 'import pyarrow' && python -m deltalog --version\n"),
        Block("page.md", 3, "bash", "deltalog --version\n"),
        Block("page.md", 5, "python", 'import sys\nassert sys.argv == [""], sys.argv\n'),
    ]
    done = run_blocks(found, tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "[docs] every block ran" in done.stderr


@pytest.mark.parametrize("page", _page_params())
def test_page_runs(page: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    found = [b for b in blocks(ROOT / page) if b.runs]
    needs = set().union(*(b.needs for b in found))
    code = "\n".join(b.code for b in found)
    done = run_blocks(found, tmp_path, _store_environment(request, needs, code))
    assert done.returncode == 0, (
        f"{page}: a code block failed\n--- stdout\n{done.stdout[-6000:]}\n"
        f"--- stderr\n{done.stderr[-10000:]}"
    )
    assert "[docs] every block ran" in done.stderr


def test_readme_is_one_short_page() -> None:
    lines = (ROOT / "README.md").read_text().splitlines()
    assert len(lines) <= 200, f"README.md has {len(lines)} lines; move details into docs/"


@pytest.mark.parametrize("page", ["README.md", "CONTRIBUTING.md", "CHANGELOG.md"])
def test_links_outside_the_site_point_at_files(page: str) -> None:
    # Links inside docs/ are checked by mkdocs build --strict; these pages are not in the site.
    text = (ROOT / page).read_text()
    broken = []
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if "://" in target or target.startswith(("#", "mailto:")):
            continue
        path, _, anchor = target.partition("#")
        if not (ROOT / path).exists():
            broken.append(target)
        elif anchor and path.endswith(".md"):
            slugs = {_slug(h) for h in re.findall(r"^#+ (.+)$", (ROOT / path).read_text(), re.M)}
            if anchor not in slugs:
                broken.append(target)
    assert not broken, f"{page}: broken links {broken}"


def _slug(heading: str) -> str:
    """The anchor GitHub and mkdocs give a heading."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower().replace("`", ""))
    return re.sub(r"[ ]+", "-", text)
