"""The fault-injecting proxy: a failed reply still means an applied request (unless not)."""

from __future__ import annotations

from typing import Any

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError, ConnectionClosedError
from scripted_http import Recorded

from servers import harness
from servers.fault_proxy import (
    DROP_AFTER,
    ERROR_AFTER,
    UNAVAILABLE_AFTER,
    Fault,
    FaultProxy,
    random_faults,
)
from servers.fixtures import BUCKET


def _s3(endpoint: str) -> Any:
    return boto3.client(
        "s3",
        endpoint_url=endpoint,
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
        config=Config(retries={"total_max_attempts": 1}),
    )


def _exists(s3: Any, key: str) -> bool:
    try:
        s3.head_object(Bucket=BUCKET, Key=key)
    except ClientError:
        return False
    return True


@pytest.mark.parametrize(
    ("fault", "raised"),
    [
        (DROP_AFTER, ConnectionClosedError),
        (UNAVAILABLE_AFTER, ClientError),
        (ERROR_AFTER, ClientError),
        (Fault(503, apply=False), ClientError),
        (Fault(0, apply=False), ConnectionClosedError),
    ],
    ids=lambda v: getattr(v, "name", ""),
)
def test_a_failed_reply_hides_whether_the_request_was_applied(
    moto_server: harness.ServerProcess, fault: Fault, raised: type[Exception]
) -> None:
    direct = _s3(moto_server.endpoint)
    key = f"proxy-test/{fault.name}"

    def rule(request: Recorded) -> Fault | None:
        return fault if request.method == "PUT" else None

    with FaultProxy(moto_server.endpoint, rule) as proxy:
        through = _s3(proxy.endpoint)
        with pytest.raises(raised):
            through.put_object(Bucket=BUCKET, Key=key, Body=b"payload")
        assert _exists(direct, key) == fault.apply
        assert proxy.injected == {fault.name: 1}
        assert proxy.forwarded == (1 if fault.apply else 0)
        if fault.apply:  # other requests pass unchanged, HEAD with the object's size
            assert through.get_object(Bucket=BUCKET, Key=key)["Body"].read() == b"payload"
            assert through.head_object(Bucket=BUCKET, Key=key)["ContentLength"] == 7


def test_random_faults_are_seeded_and_only_hit_selected_requests() -> None:
    def selects(request: Recorded) -> bool:
        return request.method == "PUT"

    def sample(seed: int) -> list[str | None]:
        rule = random_faults(0.5, selects, seed=seed)
        out = []
        for i in range(40):
            request = Recorded("PUT" if i % 2 else "GET", f"/k{i}", {}, b"")
            fault = rule(request)
            out.append(None if fault is None else fault.name)
        return out

    first = sample(7)
    assert first == sample(7)
    assert all(name is None for name in first[::2])  # the GETs
    assert 0 < sum(name is not None for name in first[1::2]) < 20
