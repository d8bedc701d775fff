"""Reading store options: our namespaced keys, delta-rs' names for them, environment fallbacks.

Keys are matched case-insensitively. Each setting has one canonical key (``s3.endpoint``) and
may accept the names delta-rs / object_store use (``aws_endpoint_url``), so the same
``storage_options`` dictionary can be handed to both libraries. A key in a store's own namespace
(``s3.*``) that the store does not know is refused: a misspelt endpoint must not silently send
requests to a real cloud account.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping

from logstores.errors import StoreConfigurationError

_TRUE = {"true", "1", "yes", "on"}
_FALSE = {"false", "0", "no", "off"}


class StoreOptions:
    """Case-insensitive view of ``storage_options`` for one store.

    Args:
        options: What the user passed.
        namespace: The store's own key prefix, such as ``"s3."``.
        known: Every canonical key of that namespace the store reads.

    Raises:
        StoreConfigurationError: A key in ``namespace`` is not one of ``known``.
    """

    def __init__(self, options: Mapping[str, str], namespace: str, known: Iterable[str]) -> None:
        self._values = {str(k).lower(): str(v) for k, v in options.items() if v is not None}
        known_set = {k.lower() for k in known}
        unknown = sorted(k for k in self._values if k.startswith(namespace) and k not in known_set)
        if unknown:
            raise StoreConfigurationError(
                f"unknown option(s) {', '.join(unknown)}; known: {', '.join(sorted(known_set))}"
            )

    def get(self, key: str, *aliases: str, env: Iterable[str] = ()) -> str | None:
        """The first value found under ``key``, its aliases, then environment variables."""
        for name in (key, *aliases):
            value = self._values.get(name.lower())
            if value is not None and value != "":
                return value
        for var in env:
            value = os.environ.get(var)
            if value:
                return value
        return None

    def get_bool(self, key: str, *aliases: str, default: bool, env: Iterable[str] = ()) -> bool:
        """A boolean setting (``true/false/1/0/yes/no/on/off``).

        Raises:
            StoreConfigurationError: The value is not a boolean.
        """
        value = self.get(key, *aliases, env=env)
        if value is None:
            return default
        lowered = value.strip().lower()
        if lowered in _TRUE:
            return True
        if lowered in _FALSE:
            return False
        raise StoreConfigurationError(f"option {key} must be true or false, not {value!r}")

    def get_int(self, key: str, *aliases: str, default: int, minimum: int = 0) -> int:
        """An integer setting of at least ``minimum``.

        Raises:
            StoreConfigurationError: The value is not such an integer.
        """
        value = self.get(key, *aliases)
        if value is None:
            return default
        try:
            number = int(value)
        except ValueError:
            number = minimum - 1
        if number < minimum:
            raise StoreConfigurationError(
                f"option {key} must be an integer >= {minimum}, not {value!r}"
            )
        return number


def split_bucket_url(uri: str) -> tuple[str, str, str]:
    """Split ``scheme://bucket/key`` into (``scheme://bucket/``, bucket, key without slashes).

    Raises:
        StoreConfigurationError: There is no bucket name.
    """
    scheme, sep, rest = uri.partition("://")
    bucket, _, key = rest.partition("/")
    if not sep or not bucket:
        raise StoreConfigurationError(f"expected {scheme or 'scheme'}://bucket/path, got {uri!r}")
    return f"{scheme}://{bucket}/", bucket, key.strip("/")
