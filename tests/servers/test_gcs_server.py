"""Tests of tests/servers/gcs_server.py with the real google-cloud-storage client and delta-rs."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import socket
import subprocess
import sys
import threading
import urllib.parse
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pyarrow as pa
import pytest
import requests
from google.api_core import exceptions as gexc
from google.auth.credentials import AnonymousCredentials
from google.cloud import storage
from testpaths import TESTS_DIR

from servers.gcs_server import (
    GCSTestServer,
    RequestRecord,
    delta_rs_service_account,
    delta_rs_storage_options,
)

SERVER_SCRIPT = TESTS_DIR / "servers" / "gcs_server.py"
RFC3339_MS = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")

try:
    import google_crc32c
except ImportError:  # pragma: no cover
    google_crc32c = None


def make_client(endpoint: str) -> storage.Client:
    return storage.Client(
        project="test",
        credentials=AnonymousCredentials(),
        client_options={"api_endpoint": endpoint},
    )


def b64_md5(data: bytes) -> str:
    return base64.b64encode(hashlib.md5(data).digest()).decode()


def b64_crc32c(data: bytes) -> str:
    assert google_crc32c is not None
    return base64.b64encode(google_crc32c.value(data).to_bytes(4, "big")).decode()


@pytest.fixture(scope="module")
def server() -> Iterator[GCSTestServer]:
    with GCSTestServer(record_requests=True) as srv:
        yield srv


@pytest.fixture(scope="module")
def client(server: GCSTestServer) -> storage.Client:
    return make_client(server.endpoint)


@pytest.fixture
def bucket(client: storage.Client) -> storage.Bucket:
    return client.create_bucket(f"bkt-{uuid.uuid4().hex[:16]}")


def requests_for(server: GCSTestServer, marker: str) -> list[RequestRecord]:
    """Recorded requests whose (decoded) path mentions ``marker`` (a unique bucket name)."""
    return [r for r in server.requests if marker in urllib.parse.unquote(r.path)]


# ------------------------------------------------------------------------------------------
# Buckets and errors
# ------------------------------------------------------------------------------------------


def test_bucket_create_get_and_errors(client: storage.Client, server: GCSTestServer) -> None:
    name = f"made-{uuid.uuid4().hex[:12]}"
    created = client.create_bucket(name)
    assert created.name == name
    assert client.get_bucket(name).name == name
    assert name in [b.name for b in client.list_buckets()]
    with pytest.raises(gexc.Conflict):
        client.create_bucket(name)
    with pytest.raises(gexc.NotFound):
        client.get_bucket(f"missing-{uuid.uuid4().hex[:8]}")
    missing = client.bucket(f"missing-{uuid.uuid4().hex[:8]}")
    with pytest.raises(gexc.NotFound):
        missing.blob("x").upload_from_string(b"data")
    with pytest.raises(gexc.NotFound):
        list(missing.list_blobs())
    with pytest.raises(gexc.NotFound):
        missing.blob("x").download_as_bytes()


def test_unknown_route_and_bad_input_get_json_errors(
    server: GCSTestServer, bucket: storage.Bucket
) -> None:
    base = server.endpoint
    response = requests.get(f"{base}/storage/v1/nothing/here", timeout=10)
    assert response.status_code == 404
    assert response.json()["error"]["code"] == 404

    response = requests.post(f"{base}/storage/v1/b?project=x", data=b"{not json", timeout=10)
    assert response.status_code == 400
    assert response.json()["error"]["errors"][0]["reason"] == "invalid"

    response = requests.post(
        f"{base}/upload/storage/v1/b/{bucket.name}/o?uploadType=multipart",
        data=b"garbage",
        headers={"Content-Type": 'multipart/related; boundary="xyz"'},
        timeout=10,
    )
    assert response.status_code == 400

    response = requests.get(f"{base}/storage/v1/b/{bucket.name}/o?maxResults=lots", timeout=10)
    assert response.status_code == 400

    response = requests.get(f"{base}/storage/v1/b/{bucket.name}/o?pageToken=@@@", timeout=10)
    assert response.status_code == 400

    response = requests.patch(f"{base}/storage/v1/b/{bucket.name}/o", timeout=10)
    assert response.status_code == 405

    # The server still works after all that.
    bucket.blob("after").upload_from_string(b"still alive")
    assert bucket.blob("after").download_as_bytes() == b"still alive"


def raw_exchange(server: GCSTestServer, data: bytes) -> bytes:
    """Send raw bytes on a fresh connection, half-close it, and read the whole answer."""
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
        sock.sendall(data)
        sock.shutdown(socket.SHUT_WR)
        chunks = []
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks)


def test_malformed_http_does_not_break_the_server(
    server: GCSTestServer, bucket: storage.Bucket
) -> None:
    assert b" 400 " in raw_exchange(server, b"GARBAGE\r\n\r\n").split(b"\r\n", 1)[0]
    bad_length = raw_exchange(
        server, f"PUT /{bucket.name}/x HTTP/1.1\r\nHost: a\r\nContent-Length: abc\r\n\r\n".encode()
    )
    assert bad_length.startswith(b"HTTP/1.1 400 ")
    assert b"<Code>InvalidArgument</Code>" in bad_length
    truncated = raw_exchange(
        server,
        f"PUT /{bucket.name}/x HTTP/1.1\r\nHost: a\r\nContent-Length: 100\r\n\r\nshort".encode(),
    )
    assert truncated.startswith(b"HTTP/1.1 400 ")
    chunked = raw_exchange(
        server,
        f"PUT /{bucket.name}/chunked HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n"
        "Connection: close\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n".encode(),
    )
    assert chunked.startswith(b"HTTP/1.1 200 ")
    bad_chunk = raw_exchange(
        server,
        f"PUT /{bucket.name}/c2 HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"
        "zz\r\n".encode(),
    )
    assert bad_chunk.startswith(b"HTTP/1.1 400 ")
    assert bucket.blob("chunked").download_as_bytes() == b"hello world"
    assert bucket.get_blob("x") is None
    assert bucket.get_blob("c2") is None


# ------------------------------------------------------------------------------------------
# Uploads and downloads
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("data", [b"hello, world", b"", bytes(range(256)) * 100])
def test_round_trip(bucket: storage.Bucket, server: GCSTestServer, data: bytes) -> None:
    blob = bucket.blob("dir/object.bin")
    blob.upload_from_string(data, content_type="application/x-test")
    assert blob.size == len(data)
    fetched = bucket.blob("dir/object.bin").download_as_bytes()
    assert fetched == data
    # Small objects go as one multipart upload and come back from the /download URL.
    methods = [
        (r.method, r.path, r.query.get("uploadType")) for r in requests_for(server, bucket.name)
    ]
    assert ("POST", f"/upload/storage/v1/b/{bucket.name}/o", "multipart") in methods
    assert ("GET", f"/download/storage/v1/b/{bucket.name}/o/dir%2Fobject.bin", None) in methods


def test_round_trip_str_and_file(bucket: storage.Bucket, tmp_path: Path) -> None:
    bucket.blob("text").upload_from_string("grüße")
    assert bucket.blob("text").download_as_text() == "grüße"
    source = tmp_path / "src.bin"
    source.write_bytes(os.urandom(3000))
    bucket.blob("file").upload_from_filename(str(source))
    target = tmp_path / "dst.bin"
    bucket.blob("file").download_to_filename(str(target))
    assert target.read_bytes() == source.read_bytes()


def test_large_resumable_upload_in_chunks(bucket: storage.Bucket, server: GCSTestServer) -> None:
    data = os.urandom(10 * 1024 * 1024)
    blob = bucket.blob("big.bin", chunk_size=256 * 1024 * 4)
    blob.upload_from_string(data, if_generation_match=0)
    assert blob.size == len(data)
    assert blob.md5_hash == b64_md5(data)

    recorded = requests_for(server, bucket.name)
    initiate = [r for r in recorded if r.method == "POST" and "upload" in r.path]
    assert [r.query.get("uploadType") for r in initiate] == ["resumable"]
    assert initiate[0].query.get("ifGenerationMatch") == "0"
    chunks = [r for r in recorded if r.method == "PUT"]
    assert len(chunks) == 10
    assert [r.status for r in chunks] == [308] * 9 + [200]
    assert all(r.body_size == 1024 * 1024 for r in chunks)
    assert (
        chunks[-1].headers["content-range"]
        == f"bytes {9 * 1024 * 1024}-{len(data) - 1}/{len(data)}"
    )

    assert bucket.blob("big.bin").download_as_bytes() == data
    # Another create-only resumable upload of the name is refused up front, like on GCS (the
    # condition is checked again when an upload completes, see the next test).
    server.clear_requests()
    with pytest.raises(gexc.PreconditionFailed):
        bucket.blob("big.bin", chunk_size=1024 * 1024).upload_from_string(
            os.urandom(9 * 1024 * 1024), if_generation_match=0
        )
    refused = requests_for(server, bucket.name)
    assert [(r.method, r.query.get("uploadType"), r.status) for r in refused] == [
        ("POST", "resumable", 412)
    ]
    assert bucket.blob("big.bin").download_as_bytes() == data


def test_resumable_precondition_is_checked_when_the_upload_completes(
    bucket: storage.Bucket,
) -> None:
    blob = bucket.blob("late")
    session_url = blob.create_resumable_upload_session(size=6, if_generation_match=0)
    first = requests.put(
        session_url, data=b"abc", headers={"Content-Range": "bytes 0-2/6"}, timeout=10
    )
    assert first.status_code == 308
    assert first.headers["Range"] == "bytes=0-2"
    # Someone else creates the object while the upload is in flight.
    bucket.blob("late").upload_from_string(b"winner", if_generation_match=0)
    final = requests.put(
        session_url, data=b"def", headers={"Content-Range": "bytes 3-5/6"}, timeout=10
    )
    assert final.status_code == 412
    assert final.json()["error"]["errors"][0]["reason"] == "conditionNotMet"
    assert bucket.blob("late").download_as_bytes() == b"winner"


def test_resumable_upload_with_unknown_size_and_status_query(bucket: storage.Bucket) -> None:
    session_url = bucket.blob("stream").create_resumable_upload_session()
    status = requests.put(session_url, headers={"Content-Range": "bytes */*"}, timeout=10)
    assert status.status_code == 308
    assert "Range" not in status.headers
    part = requests.put(
        session_url, data=b"x" * 10, headers={"Content-Range": "bytes 0-9/*"}, timeout=10
    )
    assert part.status_code == 308
    assert part.headers["Range"] == "bytes=0-9"
    done = requests.put(
        session_url, data=b"yz", headers={"Content-Range": "bytes 10-11/12"}, timeout=10
    )
    assert done.status_code == 200
    assert done.json()["size"] == "12"
    assert bucket.blob("stream").download_as_bytes() == b"x" * 10 + b"yz"


def test_media_upload(server: GCSTestServer, bucket: storage.Bucket) -> None:
    response = requests.post(
        f"{server.endpoint}/upload/storage/v1/b/{bucket.name}/o",
        params={"uploadType": "media", "name": "m/e d", "ifGenerationMatch": "0"},
        data=b"media body",
        headers={"Content-Type": "text/x-media"},
        timeout=10,
    )
    assert response.status_code == 200
    assert response.json()["name"] == "m/e d"
    blob = bucket.get_blob("m/e d")
    assert blob is not None
    assert blob.content_type == "text/x-media"
    assert blob.download_as_bytes() == b"media body"
    again = requests.post(
        f"{server.endpoint}/upload/storage/v1/b/{bucket.name}/o",
        params={"uploadType": "media", "name": "m/e d", "ifGenerationMatch": "0"},
        data=b"second",
        timeout=10,
    )
    assert again.status_code == 412


def test_metadata_fields(server: GCSTestServer, bucket: storage.Bucket) -> None:
    data = b"metadata please"
    blob = bucket.blob("a/b c/ü.txt")
    blob.metadata = {"k": "v"}
    blob.upload_from_string(data, content_type="text/plain")
    fetched = bucket.get_blob("a/b c/ü.txt")
    assert fetched is not None
    assert fetched.generation == blob.generation
    assert fetched.generation is not None and fetched.generation > 0
    assert fetched.metageneration == 1
    assert fetched.size == len(data)
    assert fetched.content_type == "text/plain"
    assert fetched.md5_hash == b64_md5(data)
    if google_crc32c is not None:
        assert fetched.crc32c == b64_crc32c(data)
    assert fetched.metadata == {"k": "v"}
    assert fetched.etag
    assert fetched.updated is not None and fetched.updated.tzinfo is not None
    assert fetched.time_created == fetched.updated

    raw = requests.get(
        f"{server.endpoint}/storage/v1/b/{bucket.name}/o/a%2Fb%20c%2F%C3%BC.txt", timeout=10
    ).json()
    assert raw["kind"] == "storage#object"
    assert raw["name"] == "a/b c/ü.txt"
    assert raw["bucket"] == bucket.name
    assert raw["id"] == f"{bucket.name}/a/b c/ü.txt/{blob.generation}"
    assert raw["generation"] == str(blob.generation)
    assert raw["metageneration"] == "1"
    assert raw["size"] == str(len(data))
    assert RFC3339_MS.match(raw["updated"]) and RFC3339_MS.match(raw["timeCreated"])
    assert raw["selfLink"].startswith(server.endpoint)
    assert raw["mediaLink"].startswith(f"{server.endpoint}/download/")
    assert requests.get(raw["mediaLink"], timeout=10).content == data


def test_generations_strictly_increase(bucket: storage.Bucket) -> None:
    generations = []
    for i in range(20):
        blob = bucket.blob(f"g{i % 3}")
        blob.upload_from_string(str(i))
        generations.append(blob.generation)
    assert generations == sorted(generations)
    assert len(set(generations)) == len(generations)


def test_download_headers_and_checksums(server: GCSTestServer, bucket: storage.Bucket) -> None:
    data = os.urandom(5000)
    blob = bucket.blob("h")
    blob.upload_from_string(data)
    response = requests.get(
        f"{server.endpoint}/download/storage/v1/b/{bucket.name}/o/h?alt=media", timeout=10
    )
    assert response.status_code == 200
    assert response.content == data
    assert response.headers["x-goog-generation"] == str(blob.generation)
    assert response.headers["x-goog-metageneration"] == "1"
    assert response.headers["x-goog-stored-content-length"] == "5000"
    hashes = dict(item.split("=", 1) for item in response.headers["x-goog-hash"].split(","))
    assert hashes["md5"] == b64_md5(data)
    if google_crc32c is not None:
        assert hashes["crc32c"] == b64_crc32c(data)
    # The client validates both kinds of checksum against these headers.
    assert bucket.blob("h").download_as_bytes(checksum="md5") == data
    assert bucket.blob("h").download_as_bytes(checksum="crc32c") == data
    # The JSON metadata URL also serves the bytes with alt=media.
    media = requests.get(
        f"{server.endpoint}/storage/v1/b/{bucket.name}/o/h", params={"alt": "media"}, timeout=10
    )
    assert media.content == data


def test_range_reads(server: GCSTestServer, bucket: storage.Bucket) -> None:
    data = bytes(range(256)) * 40
    bucket.blob("r").upload_from_string(data)
    blob = bucket.blob("r")
    assert blob.download_as_bytes(start=10, end=19) == data[10:20]
    assert blob.download_as_bytes(start=10_000) == data[10_000:]
    assert blob.download_as_bytes(end=99) == data[:100]
    assert blob.download_as_bytes(start=len(data) - 1, end=len(data) + 500) == data[-1:]

    url = f"{server.endpoint}/download/storage/v1/b/{bucket.name}/o/r?alt=media"
    suffix = requests.get(url, headers={"Range": "bytes=-7"}, timeout=10)
    assert suffix.status_code == 206
    assert suffix.content == data[-7:]
    assert suffix.headers["Content-Range"] == f"bytes {len(data) - 7}-{len(data) - 1}/{len(data)}"
    middle = requests.get(url, headers={"Range": "bytes=100-199"}, timeout=10)
    assert middle.status_code == 206
    assert middle.content == data[100:200]
    assert middle.headers["Content-Range"] == f"bytes 100-199/{len(data)}"
    beyond = requests.get(url, headers={"Range": f"bytes={len(data)}-"}, timeout=10)
    assert beyond.status_code == 416
    assert beyond.headers["Content-Range"] == f"bytes */{len(data)}"


def test_blob_open_seek_and_read(bucket: storage.Bucket) -> None:
    data = os.urandom(300_000)
    bucket.blob("seek").upload_from_string(data)
    with bucket.blob("seek").open("rb", chunk_size=64 * 1024) as reader:
        assert reader.read(10) == data[:10]
        reader.seek(150_000)
        assert reader.read(100_000) == data[150_000:250_000]
        reader.seek(-50, os.SEEK_END)
        assert reader.tell() == len(data) - 50
        assert reader.read() == data[-50:]
        reader.seek(5)
        assert reader.read(3) == data[5:8]


def test_download_preconditions_and_generation(bucket: storage.Bucket) -> None:
    blob = bucket.blob("p")
    blob.upload_from_string(b"one")
    first = blob.generation
    assert first is not None
    assert bucket.blob("p").download_as_bytes(if_generation_match=first) == b"one"
    with pytest.raises(gexc.PreconditionFailed):
        bucket.blob("p").download_as_bytes(if_generation_match=first + 1)
    with pytest.raises(gexc.NotModified):
        bucket.blob("p").download_as_bytes(if_generation_not_match=first)
    assert bucket.blob("p", generation=first).download_as_bytes() == b"one"
    blob.upload_from_string(b"two")
    # Old generations are not kept.
    with pytest.raises(gexc.NotFound):
        bucket.blob("p", generation=first).download_as_bytes()


# ------------------------------------------------------------------------------------------
# Preconditions on writes
# ------------------------------------------------------------------------------------------


def test_if_generation_match_zero_creates_only_once(bucket: storage.Bucket) -> None:
    bucket.blob("once").upload_from_string(b"first", if_generation_match=0)
    with pytest.raises(gexc.PreconditionFailed) as info:
        bucket.blob("once").upload_from_string(b"second", if_generation_match=0)
    assert info.value.code == 412
    assert bucket.blob("once").download_as_bytes() == b"first"


def test_if_generation_match_overwrite_and_stale(bucket: storage.Bucket) -> None:
    blob = bucket.blob("versioned")
    blob.upload_from_string(b"v1", if_generation_match=0)
    gen1 = blob.generation
    assert gen1 is not None
    blob.upload_from_string(b"v2", if_generation_match=gen1)
    gen2 = blob.generation
    assert gen2 is not None and gen2 > gen1
    with pytest.raises(gexc.PreconditionFailed):
        bucket.blob("versioned").upload_from_string(b"stale", if_generation_match=gen1)
    assert bucket.blob("versioned").download_as_bytes() == b"v2"
    with pytest.raises(gexc.PreconditionFailed):
        bucket.blob("missing").upload_from_string(b"x", if_generation_match=gen2)


def test_other_write_preconditions(bucket: storage.Bucket) -> None:
    blob = bucket.blob("other")
    blob.upload_from_string(b"base")
    gen = blob.generation
    assert gen is not None
    with pytest.raises(gexc.PreconditionFailed):
        bucket.blob("other").upload_from_string(b"x", if_generation_not_match=gen)
    bucket.blob("other").upload_from_string(b"y", if_generation_not_match=gen + 1)
    with pytest.raises(gexc.PreconditionFailed):
        bucket.blob("other").upload_from_string(b"z", if_metageneration_match=2)
    bucket.blob("other").upload_from_string(b"z", if_metageneration_match=1)
    with pytest.raises(gexc.PreconditionFailed):
        bucket.blob("other").upload_from_string(b"w", if_metageneration_not_match=1)
    with pytest.raises(gexc.PreconditionFailed):
        bucket.blob("absent").upload_from_string(b"w", if_generation_not_match=0)
    assert bucket.blob("other").download_as_bytes() == b"z"


def run_racers(count: int, action: Callable[[int], None]) -> list[bool]:
    """Run ``action(i)`` in ``count`` threads released together by a barrier.

    Returns, per thread, whether its action succeeded; a ``PreconditionFailed`` counts as a
    loss, any other exception fails the test.
    """
    barrier = threading.Barrier(count)
    won = [False] * count
    unexpected: list[BaseException] = []

    def run(index: int) -> None:
        barrier.wait()
        try:
            action(index)
        except gexc.PreconditionFailed:
            return
        except BaseException as exc:
            unexpected.append(exc)
            return
        won[index] = True

    threads = [threading.Thread(target=run, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not unexpected, unexpected
    return won


def test_racing_create_only_uploads_have_exactly_one_winner(
    server: GCSTestServer, bucket: storage.Bucket
) -> None:
    threads_count, rounds = 8, 25
    buckets = [make_client(server.endpoint).bucket(bucket.name) for _ in range(threads_count)]
    for round_no in range(rounds):
        name = f"race/{round_no}"

        def create(index: int, name: str = name) -> None:
            blob = buckets[index].blob(name)
            blob.upload_from_string(f"writer-{index}".encode(), if_generation_match=0)

        won = run_racers(threads_count, create)
        assert won.count(True) == 1, (round_no, won)
        stored = bucket.blob(name).download_as_bytes()
        assert stored == f"writer-{won.index(True)}".encode()


def test_racing_conditional_overwrites_have_exactly_one_winner(
    server: GCSTestServer, bucket: storage.Bucket
) -> None:
    threads_count = 8
    buckets = [make_client(server.endpoint).bucket(bucket.name) for _ in range(threads_count)]
    bucket.blob("counter").upload_from_string(b"start")
    seen_generations = set()
    for round_no in range(10):
        current = bucket.get_blob("counter")
        assert current is not None and current.generation is not None
        seen_generations.add(current.generation)

        def overwrite(index: int, generation: int = current.generation) -> None:
            blob = buckets[index].blob("counter")
            blob.upload_from_string(f"{index}".encode(), if_generation_match=generation)

        won = run_racers(threads_count, overwrite)
        assert won.count(True) == 1, (round_no, won)
        assert bucket.blob("counter").download_as_bytes() == str(won.index(True)).encode()
    assert len(seen_generations) == 10


# ------------------------------------------------------------------------------------------
# Listing
# ------------------------------------------------------------------------------------------


def upload_names(bucket: storage.Bucket, names: list[str]) -> None:
    for name in names:
        bucket.blob(name).upload_from_string(name.encode())


def test_list_prefix_and_delimiter(bucket: storage.Bucket) -> None:
    names = ["a/1", "a/2", "a/b/3", "a/b/4", "a0", "b/1", "c", "d/"]
    upload_names(bucket, list(reversed(names)))
    assert [b.name for b in bucket.list_blobs()] == names
    assert [b.name for b in bucket.list_blobs(prefix="a/")] == ["a/1", "a/2", "a/b/3", "a/b/4"]

    top = bucket.list_blobs(delimiter="/")
    assert [b.name for b in top] == ["a0", "c"]
    assert top.prefixes == {"a/", "b/", "d/"}

    nested = bucket.list_blobs(prefix="a/", delimiter="/")
    assert [b.name for b in nested] == ["a/1", "a/2"]
    assert nested.prefixes == {"a/b/"}

    trailing = bucket.list_blobs(delimiter="/", include_trailing_delimiter=True)
    assert [b.name for b in trailing] == ["a0", "c", "d/"]
    assert trailing.prefixes == {"a/", "b/", "d/"}

    listed = list(bucket.list_blobs(prefix="a/b/"))
    assert [b.size for b in listed] == [5, 5]
    assert all(b.generation for b in listed)


def test_list_offsets(bucket: storage.Bucket) -> None:
    upload_names(bucket, [f"k{i:02d}" for i in range(10)])
    window = bucket.list_blobs(start_offset="k03", end_offset="k07")
    assert [b.name for b in window] == ["k03", "k04", "k05", "k06"]
    assert [b.name for b in bucket.list_blobs(start_offset="k085")] == ["k09"]
    assert [b.name for b in bucket.list_blobs(end_offset="k02")] == ["k00", "k01"]


def test_list_pagination(server: GCSTestServer, bucket: storage.Bucket) -> None:
    names = [f"obj-{i:03d}" for i in range(7)]
    upload_names(bucket, names)
    iterator = bucket.list_blobs(page_size=2)
    pages = [[b.name for b in page] for page in iterator.pages]
    assert pages == [names[0:2], names[2:4], names[4:6], names[6:7]]
    lists = [
        r
        for r in requests_for(server, bucket.name)
        if r.method == "GET" and r.path == f"/storage/v1/b/{bucket.name}/o"
    ]
    assert [r.query.get("maxResults") for r in lists[-4:]] == ["2"] * 4
    assert "pageToken" not in lists[-4].query
    assert all("pageToken" in r.query for r in lists[-3:])


def test_list_pagination_with_prefixes(bucket: storage.Bucket) -> None:
    upload_names(bucket, ["a/1", "a/2", "a/3", "b", "c/1", "c/2", "d", "e/1"])
    iterator = bucket.list_blobs(delimiter="/", page_size=2)
    items: list[str] = []
    prefixes: list[list[str]] = []
    for page in iterator.pages:
        items.extend(b.name for b in page)
        prefixes.append(sorted(page.prefixes))
        assert len(page.prefixes) + page.num_items <= 2
    assert items == ["b", "d"]
    assert [p for page in prefixes for p in page] == ["a/", "c/", "e/"]


def test_list_many_objects_max_results_two(bucket: storage.Bucket) -> None:
    names = [f"many/{i:04d}" for i in range(61)]
    upload_names(bucket, names)
    iterator = bucket.list_blobs(prefix="many/", page_size=2)
    listed = [b.name for b in iterator]
    assert listed == names
    assert iterator.page_number == 31


def test_list_orders_by_utf8_bytes(bucket: storage.Bucket) -> None:
    names = ["z", "é", "a", "\uffff", "\U0001d11e", "Z", "a b", "a/b"]
    upload_names(bucket, names)
    listed = [b.name for b in bucket.list_blobs()]
    assert listed == sorted(names, key=lambda n: n.encode("utf-8"))
    assert listed.index("\uffff") < listed.index("\U0001d11e")


# ------------------------------------------------------------------------------------------
# Delete, patch, copy, rewrite
# ------------------------------------------------------------------------------------------


def test_delete_and_missing(bucket: storage.Bucket) -> None:
    blob = bucket.blob("gone")
    blob.upload_from_string(b"x")
    assert blob.exists()
    with pytest.raises(gexc.PreconditionFailed):
        bucket.blob("gone").delete(if_generation_match=(blob.generation or 0) + 1)
    assert blob.exists()
    bucket.blob("gone").delete(if_generation_match=blob.generation)
    assert not blob.exists()
    assert bucket.get_blob("gone") is None
    with pytest.raises(gexc.NotFound):
        bucket.blob("gone").delete()
    with pytest.raises(gexc.NotFound):
        bucket.blob("gone").download_as_bytes()
    with pytest.raises(gexc.NotFound):
        bucket.blob("never").reload()


def test_patch_metadata(bucket: storage.Bucket) -> None:
    blob = bucket.blob("patched")
    blob.upload_from_string(b"data", content_type="text/plain")
    generation = blob.generation
    blob.metadata = {"color": "blue"}
    blob.content_type = "application/json"
    blob.patch(if_metageneration_match=1)
    assert blob.metageneration == 2
    assert blob.generation == generation
    fetched = bucket.get_blob("patched")
    assert fetched is not None
    assert fetched.metadata == {"color": "blue"}
    assert fetched.content_type == "application/json"
    assert fetched.metageneration == 2
    fetched.metadata = {"size": "L"}
    with pytest.raises(gexc.PreconditionFailed):
        fetched.patch(if_metageneration_match=1)
    fetched.patch(if_metageneration_match=2)
    merged = bucket.get_blob("patched")
    assert merged is not None
    assert merged.metadata == {"color": "blue", "size": "L"}
    assert merged.metageneration == 3
    assert bucket.blob("patched").download_as_bytes() == b"data"


def test_copy_and_rewrite(client: storage.Client, bucket: storage.Bucket) -> None:
    other = client.create_bucket(f"dst-{uuid.uuid4().hex[:12]}")
    source = bucket.blob("src/a b")
    data = os.urandom(2048)
    source.metadata = {"m": "1"}
    source.upload_from_string(data, content_type="image/png")

    copied = bucket.copy_blob(source, other, "copied/x", if_generation_match=0)
    assert copied.name == "copied/x"
    assert copied.generation != source.generation
    assert other.blob("copied/x").download_as_bytes() == data
    fetched = other.get_blob("copied/x")
    assert fetched is not None
    assert fetched.content_type == "image/png" and fetched.metadata == {"m": "1"}
    with pytest.raises(gexc.PreconditionFailed):
        bucket.copy_blob(source, other, "copied/x", if_generation_match=0)
    with pytest.raises(gexc.PreconditionFailed):
        bucket.copy_blob(
            source, other, "copied/y", if_source_generation_match=(source.generation or 0) + 1
        )
    with pytest.raises(gexc.NotFound):
        bucket.copy_blob(bucket.blob("no-such"), other, "copied/z")

    target = other.blob("rewritten")
    token, done_bytes, total = target.rewrite(source, if_generation_match=0)
    assert token is None
    assert done_bytes == total == len(data)
    assert target.generation is not None
    assert other.blob("rewritten").download_as_bytes() == data
    with pytest.raises(gexc.PreconditionFailed):
        other.blob("rewritten").rewrite(source, if_generation_match=0)
    current = other.get_blob("rewritten")
    assert current is not None
    other.blob("rewritten").rewrite(source, if_generation_match=current.generation)


def test_object_names_need_decoding(server: GCSTestServer, bucket: storage.Bucket) -> None:
    names = ["dir/sub dir/file?#%&+.txt", "ünï/cödé", "trailing/", "x%2Fy"]
    for name in names:
        bucket.blob(name).upload_from_string(name.encode())
    for name in names:
        assert bucket.blob(name).download_as_bytes() == name.encode()
    assert sorted(b.name for b in bucket.list_blobs()) == sorted(names)
    assert bucket.get_blob("x/y") is None


# ------------------------------------------------------------------------------------------
# XML API (the subset object_store uses)
# ------------------------------------------------------------------------------------------


def test_xml_api_put_get_head_list_delete(server: GCSTestServer, bucket: storage.Bucket) -> None:
    base = f"{server.endpoint}/{bucket.name}"
    put = requests.put(
        f"{base}/x%2F%5Fy",
        data=b"0123456789",
        headers={"x-goog-if-generation-match": "0"},
        timeout=10,
    )
    assert put.status_code == 200
    generation = put.headers["x-goog-generation"]
    assert put.headers["ETag"] == f'"{hashlib.md5(b"0123456789").hexdigest()}"'
    again = requests.put(
        f"{base}/x/_y", data=b"other", headers={"x-goog-if-generation-match": "0"}, timeout=10
    )
    assert again.status_code == 412
    assert "<Code>PreconditionFailed</Code>" in again.text
    stale = requests.put(
        f"{base}/x/_y", data=b"other", headers={"x-goog-if-generation-match": "1"}, timeout=10
    )
    assert stale.status_code == 412
    ok = requests.put(
        f"{base}/x/_y",
        data=b"abcdefghij",
        headers={"x-goog-if-generation-match": generation},
        timeout=10,
    )
    assert ok.status_code == 200
    assert int(ok.headers["x-goog-generation"]) > int(generation)

    got = requests.get(f"{base}/x/_y", headers={"Range": "bytes=2-4"}, timeout=10)
    assert got.status_code == 206
    assert got.content == b"cde"
    assert got.headers["Content-Range"] == "bytes 2-4/10"
    head = requests.head(f"{base}/x%2F_y", timeout=10)
    assert head.status_code == 200
    assert head.headers["Content-Length"] == "10"
    assert head.headers["x-goog-generation"] == ok.headers["x-goog-generation"]
    assert "Last-Modified" in head.headers and head.headers["ETag"] == ok.headers["ETag"]
    assert bucket.blob("x/_y").download_as_bytes() == b"abcdefghij"

    for name in ["x/a", "x/b/c", "y"]:
        requests.put(f"{base}/{name}", data=b"1", timeout=10).raise_for_status()
    listing = requests.get(
        f"{server.endpoint}/{bucket.name}",
        params={"list-type": "2", "prefix": "x/", "delimiter": "/"},
        timeout=10,
    )
    assert listing.status_code == 200
    assert re.findall(r"<Key>([^<]*)</Key>", listing.text) == ["x/_y", "x/a"]
    assert re.findall(r"<Prefix>([^<]*)</Prefix>", listing.text) == ["x/", "x/b/"]
    assert "<LastModified>" in listing.text and "<Size>10</Size>" in listing.text
    after = requests.get(
        f"{server.endpoint}/{bucket.name}",
        params={"list-type": "2", "start-after": "x/a", "max-keys": "1"},
        timeout=10,
    )
    assert re.findall(r"<Key>([^<]*)</Key>", after.text) == ["x/b/c"]
    token = re.findall(r"<NextContinuationToken>([^<]*)<", after.text)
    assert len(token) == 1
    rest = requests.get(
        f"{server.endpoint}/{bucket.name}",
        params={"list-type": "2", "start-after": "x/a", "continuation-token": token[0]},
        timeout=10,
    )
    assert re.findall(r"<Key>([^<]*)</Key>", rest.text) == ["y"]
    assert "<NextContinuationToken>" not in rest.text

    assert requests.delete(f"{base}/y", timeout=10).status_code == 204
    missing = requests.get(f"{base}/y", timeout=10)
    assert missing.status_code == 404
    assert "<Code>NoSuchKey</Code>" in missing.text
    assert requests.delete(f"{base}/y", timeout=10).status_code == 404


def test_xml_api_copy_and_multipart(server: GCSTestServer, bucket: storage.Bucket) -> None:
    base = f"{server.endpoint}/{bucket.name}"
    requests.put(f"{base}/source", data=b"copy me", timeout=10).raise_for_status()
    copy_headers = {
        "x-goog-copy-source": f"/{bucket.name}/source",
        "x-goog-if-generation-match": "0",
    }
    first = requests.put(f"{base}/dest", headers=copy_headers, timeout=10)
    assert first.status_code == 200
    assert requests.put(f"{base}/dest", headers=copy_headers, timeout=10).status_code == 412
    assert bucket.blob("dest").download_as_bytes() == b"copy me"

    start = requests.post(f"{base}/multi?uploads", timeout=10)
    upload_id = re.findall(r"<UploadId>([^<]*)</UploadId>", start.text)[0]
    parts = [os.urandom(1000), os.urandom(500)]
    etags = []
    for number, part in enumerate(parts, start=1):
        response = requests.put(
            f"{base}/multi",
            params={"partNumber": number, "uploadId": upload_id},
            data=part,
            timeout=10,
        )
        assert response.status_code == 200
        etags.append(response.headers["ETag"])
    body = (
        "<CompleteMultipartUpload>"
        + "".join(
            f"<Part><PartNumber>{n}</PartNumber><ETag>{etag}</ETag></Part>"
            for n, etag in enumerate(etags, start=1)
        )
        + "</CompleteMultipartUpload>"
    )
    done = requests.post(
        f"{base}/multi",
        params={"uploadId": upload_id},
        data=body,
        headers={"x-goog-if-generation-match": "0"},
        timeout=10,
    )
    assert done.status_code == 200
    assert bucket.blob("multi").download_as_bytes() == b"".join(parts)


# ------------------------------------------------------------------------------------------
# Command line
# ------------------------------------------------------------------------------------------


def test_cli_prints_port_and_serves(tmp_path: Path) -> None:
    process = subprocess.Popen(
        [
            sys.executable,
            str(SERVER_SCRIPT),
            "--host",
            "127.0.0.1",
            "--port",
            "0",
            "--bucket",
            "cli-bucket",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        match = re.fullmatch(r"PORT (\d+)\n", line)
        assert match, line
        port = int(match.group(1))
        assert port > 0
        cli_client = make_client(f"http://127.0.0.1:{port}")
        blob = cli_client.bucket("cli-bucket").blob("hello")
        blob.upload_from_string(b"from the cli", if_generation_match=0)
        assert cli_client.bucket("cli-bucket").blob("hello").download_as_bytes() == b"from the cli"
        with pytest.raises(gexc.PreconditionFailed):
            blob.upload_from_string(b"again", if_generation_match=0)
    finally:
        process.terminate()
        process.wait(timeout=30)
    assert process.returncode == 0
    assert process.stdout.read() == ""


def test_stop_releases_the_port() -> None:
    srv = GCSTestServer(buckets=["stop-bucket"]).start()
    endpoint = srv.endpoint
    local = make_client(endpoint)
    local.bucket("stop-bucket").blob("x").upload_from_string(b"1")
    srv.stop()
    with pytest.raises(requests.exceptions.ConnectionError):
        requests.get(f"{endpoint}/storage/v1/b/stop-bucket", timeout=10)


# ------------------------------------------------------------------------------------------
# delta-rs through object_store's GCS client
# ------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def delta_options(
    server: GCSTestServer, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, str]:
    path = tmp_path_factory.mktemp("gcs-sa") / "service-account.json"
    path.write_text(json.dumps(delta_rs_service_account(server.endpoint)))
    return delta_rs_storage_options(str(path))


def test_delta_rs_reads_a_table_uploaded_with_the_client(
    bucket: storage.Bucket, delta_options: dict[str, str], tmp_path: Path
) -> None:
    deltalake = pytest.importorskip("deltalake")
    local = tmp_path / "table"
    deltalake.write_deltalake(str(local), pa.table({"id": [1, 2, 3], "s": ["a", "b", "c"]}))
    deltalake.write_deltalake(str(local), pa.table({"id": [4], "s": ["d"]}), mode="append")
    uploaded = 0
    for path in sorted(local.rglob("*")):
        if path.is_file():
            bucket.blob(f"t1/{path.relative_to(local).as_posix()}").upload_from_filename(str(path))
            uploaded += 1
    assert uploaded >= 4

    expected = deltalake.DeltaTable(str(local))
    table = deltalake.DeltaTable(f"gs://{bucket.name}/t1", storage_options=delta_options)
    assert table.version() == expected.version() == 1
    assert sorted(uri.rsplit("/", 1)[-1] for uri in table.file_uris()) == sorted(
        uri.rsplit("/", 1)[-1] for uri in expected.file_uris()
    )
    assert all(uri.startswith(f"gs://{bucket.name}/t1/") for uri in table.file_uris())
    rows = table.to_pyarrow_table().sort_by("id").to_pydict()
    assert rows == {"id": [1, 2, 3, 4], "s": ["a", "b", "c", "d"]}
    old = deltalake.DeltaTable(f"gs://{bucket.name}/t1", storage_options=delta_options, version=0)
    assert old.to_pyarrow_table().num_rows == 3


def test_delta_rs_service_account_option_aliases(
    bucket: storage.Bucket, server: GCSTestServer, delta_options: dict[str, str]
) -> None:
    deltalake = pytest.importorskip("deltalake")
    (path,) = delta_options.values()
    document = json.dumps(delta_rs_service_account(server.endpoint))
    uri = f"gs://{bucket.name}/alias"
    deltalake.write_deltalake(uri, pa.table({"v": [7]}), storage_options=delta_options)
    for options in (
        {"service_account_path": path},
        {"google_service_account_path": path},
        {"google_service_account_key": document},
    ):
        assert deltalake.DeltaTable(uri, storage_options=options).to_pyarrow_table()[
            "v"
        ].to_pylist() == [7]


def test_delta_rs_writes_through_the_server(
    server: GCSTestServer, bucket: storage.Bucket, delta_options: dict[str, str]
) -> None:
    deltalake = pytest.importorskip("deltalake")
    uri = f"gs://{bucket.name}/t2"
    deltalake.write_deltalake(uri, pa.table({"id": [1, 2]}), storage_options=delta_options)
    deltalake.write_deltalake(
        uri, pa.table({"id": [3]}), storage_options=delta_options, mode="append"
    )
    table = deltalake.DeltaTable(uri, storage_options=delta_options)
    assert table.version() == 1
    assert sorted(table.to_pyarrow_table()["id"].to_pylist()) == [1, 2, 3]
    names = {b.name for b in bucket.list_blobs(prefix="t2/_delta_log/")}
    assert names == {
        "t2/_delta_log/00000000000000000000.json",
        "t2/_delta_log/00000000000000000001.json",
    }
    commits = [
        r
        for r in requests_for(server, bucket.name)
        if r.method == "PUT" and "_delta_log" in urllib.parse.unquote(r.path)
    ]
    assert commits and all(r.headers.get("x-goog-if-generation-match") == "0" for r in commits)


def test_delta_rs_concurrent_appends_lose_nothing(
    bucket: storage.Bucket, delta_options: dict[str, str]
) -> None:
    deltalake = pytest.importorskip("deltalake")
    uri = f"gs://{bucket.name}/t3"
    deltalake.write_deltalake(uri, pa.table({"id": [0]}), storage_options=delta_options)
    writers = 4
    barrier = threading.Barrier(writers)
    errors: list[BaseException] = []

    def append(index: int) -> None:
        barrier.wait()
        try:
            deltalake.write_deltalake(
                uri, pa.table({"id": [index + 1]}), storage_options=delta_options, mode="append"
            )
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=append, args=(i,)) for i in range(writers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors, errors
    table = deltalake.DeltaTable(uri, storage_options=delta_options)
    assert table.version() == writers
    assert sorted(table.to_pyarrow_table()["id"].to_pylist()) == list(range(writers + 1))


def test_delta_rs_large_file_uses_xml_multipart(
    server: GCSTestServer, bucket: storage.Bucket, delta_options: dict[str, str]
) -> None:
    deltalake = pytest.importorskip("deltalake")
    uri = f"gs://{bucket.name}/t4"
    values = [os.urandom(32) for _ in range(400_000)]
    deltalake.write_deltalake(
        uri, pa.table({"b": pa.array(values, pa.binary())}), storage_options=delta_options
    )
    table = deltalake.DeltaTable(uri, storage_options=delta_options)
    assert sorted(table.to_pyarrow_table()["b"].to_pylist()) == sorted(values)
    recorded = requests_for(server, bucket.name)
    assert any(r.method == "POST" and "uploads" in r.query for r in recorded)
    assert any(r.method == "PUT" and "partNumber" in r.query for r in recorded)
