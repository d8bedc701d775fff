"""Retrying requests the service asked us to repeat: throttling and transient failures."""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from .errors import FileAlreadyExistsError, StoreThrottledError, StoreUnavailableError

T = TypeVar("T")

#: Errors after which the same request may be sent again.
RETRYABLE: tuple[type[Exception], ...] = (StoreThrottledError, StoreUnavailableError)


@dataclass(frozen=True, slots=True)
class StoreRetryPolicy:
    """Exponential backoff with full jitter for throttled or transient store requests.

    Attributes:
        max_attempts: Attempts in all, the first included (1 disables retries).
        base_delay: Upper bound of the first sleep, in seconds; doubles with each attempt.
        max_delay: Upper bound of any one sleep, in seconds.
    """

    max_attempts: int = 8
    base_delay: float = 0.05
    max_delay: float = 5.0

    def delay(self, attempt: int) -> float:
        """Seconds to wait after failed attempt number ``attempt`` (counted from 1)."""
        cap = min(self.max_delay, self.base_delay * (2 ** min(attempt - 1, 60)))
        return random.uniform(0, cap)


def call_with_retries(
    request: Callable[[], T],
    policy: StoreRetryPolicy,
    *,
    on_retry: Callable[[Exception], None] | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> T:
    """Run ``request``, repeating it after throttling or transient failures.

    Args:
        request: The operation; it raises log store errors only.
        policy: How often and how long to back off.
        on_retry: Called with each error that leads to another attempt.
        sleep: Injected for unit tests.

    Raises:
        StoreThrottledError: Still throttled after the last attempt.
        StoreUnavailableError: Still failing after the last attempt.
        LogStoreError: Any error that is not worth retrying, at once.
    """
    attempt = 1
    while True:
        try:
            return request()
        except RETRYABLE as exc:
            if attempt >= policy.max_attempts:
                raise
            if on_retry is not None:
                on_retry(exc)
            sleep(policy.delay(attempt))
            attempt += 1


def create_with_retries(
    create: Callable[[], None], policy: StoreRetryPolicy, landed: Callable[[], bool]
) -> None:
    """Run a create-if-absent with retries, without mistaking our own landed attempt for a loss.

    A throttled or failed attempt may still have taken effect; if a later attempt is then
    refused because the name exists, ``landed()`` decides whether what exists is ours.

    Raises:
        FileAlreadyExistsError: The name is taken by someone else.
        LogStoreError: As :func:`call_with_retries`.
    """
    retried = False

    def note(exc: Exception) -> None:
        nonlocal retried
        retried = True

    try:
        call_with_retries(create, policy, on_retry=note)
    except FileAlreadyExistsError:
        if retried and landed():
            return
        raise
