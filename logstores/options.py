"""Reading store options: our namespaced keys, delta-rs' names for them, environment fallbacks.

Keys are matched case-insensitively. Each setting has one canonical key (``s3.endpoint``) and
may accept the names delta-rs / object_store use (``aws_endpoint_url``), so the same
``storage_options`` dictionary can be handed to both libraries. A key in a store's own namespace
(``s3.*``) that the store does not know is refused: a misspelt endpoint must not silently send
requests to a real cloud account.

Credentials never appear in a message, a log line or a ``repr``: errors name options, and quote
the value only of options that cannot hold a secret (:func:`is_secret_option`); option names are
shown only when they look like names (:func:`safe_option_name`); table URLs are shown through
:func:`redact_uri`, and URLs that carry credentials are refused (:func:`split_bucket_url`).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar

from .errors import StoreConfigurationError

_TRUE = {"true", "1", "yes", "on"}
_FALSE = {"false", "0", "no", "off"}

#: Words that mark an option (ours, delta-rs' or object_store's) as holding a credential:
#: ``s3.secret_access_key``, ``aws_session_token``, ``azure.sas_token``,
#: ``azure_storage_connection_string``, ``google_service_account_key``, ...
_SECRET_WORDS = (
    "secret",
    "password",
    "token",
    "key",
    "sas",
    "sig",
    "connection_string",
    "credential",
    "service_account",
)
_OPTION_NAME = re.compile(r"[a-z0-9_.\-]{0,80}", re.IGNORECASE)
#: Query parameters that carry a credential: Azure SAS ``sig``, S3 pre-signed URLs, tokens.
_SECRET_QUERY = re.compile(
    r"(?<=[?&;])([^=&;#]*(?:sig|signature|token|credential|secret|password|key)[^=&;#]*)=[^&;#]*",
    re.IGNORECASE,
)
REDACTED = "***"


def is_secret_option(key: str) -> bool:
    """Whether option ``key`` may hold a credential, so that its value is never shown.

    Errs on the side of secrecy: any key naming a secret, password, token, key, SAS, signature,
    connection string, credential or service account counts.
    """
    lowered = key.lower()
    return any(word in lowered for word in _SECRET_WORDS)


def safe_option_name(key: str) -> str:
    """``key`` as a message may show it: cut before any character no option name has.

    A user may type ``s3.secret_access_key:VALUE`` where ``=`` was meant.
    """
    m = _OPTION_NAME.match(key)
    shown = m.group() if m else ""
    return shown if shown == key else f"{shown}...(rest not shown)"


def shown_value(value: str, *keys: str) -> str:
    """What a message shows of an option's value: never the value itself.

    A credential pasted into the wrong option (or after the wrong key) must not reach an error
    message or a log, so messages name the option and what it expects, and no value.
    """
    return "the value given (not shown)"


def _userinfo_end(uri: str) -> int:
    """Index of the ``@`` ending ``user:password@`` in ``scheme://user:password@host/...``.

    -1 when there is no password.

    The password may hold an unencoded ``/`` (AWS secret keys do), so the user-info is
    everything up to the last ``@`` before any query, provided its first ``:`` comes before its
    first ``/``: ``s3://bucket/a:b@c`` is a key with odd characters, not a password.
    """
    _, sep, rest = uri.partition("://")
    if not sep:
        return -1
    cut = min((i for i in (rest.find("?"), rest.find("#")) if i != -1), default=len(rest))
    at = rest.rfind("@", 0, cut)
    if at == -1:
        return -1
    userinfo = rest[:at]
    colon, slash = userinfo.find(":"), userinfo.find("/")
    if colon == -1 or (slash != -1 and slash < colon):
        return -1
    return len(uri) - len(rest) + at


def has_credentials(uri: str) -> bool:
    """Whether ``uri`` carries a credential.

    That is a password in its user-info (``s3://KEY:SECRET@bucket``) or a signature or token in
    its query (``?sig=...``).
    """
    if _userinfo_end(uri) != -1:
        return True
    _, question, query = uri.partition("?")
    return bool(question) and _SECRET_QUERY.search("?" + query) is not None


def redact_uri(uri: str) -> str:
    """``uri`` for a message: a user-info with a password and credential query values hidden.

    ``s3://KEY:SECRET@bucket/t`` becomes ``s3://***@bucket/t``,
    ``https://acct.blob.core.windows.net/?sv=1&sig=abc`` becomes ``...?sv=1&sig=***``;
    ``abfss://container@account.dfs.core.windows.net/t`` (no password) is kept.
    """
    at = _userinfo_end(uri)
    if at != -1:
        scheme = uri.partition("://")[0]
        uri = f"{scheme}://{REDACTED}{uri[at:]}"
    head, question, query = uri.partition("?")
    if question:
        redacted = _SECRET_QUERY.sub(lambda m: f"{m.group(1)}={REDACTED}", "?" + query)
        uri = head + redacted
    return uri


#: Option names looked up in this context, when :func:`recording_option_reads` collects them.
_reads: ContextVar[set[str] | None] = ContextVar("logstores_option_reads", default=None)


@contextmanager
def recording_option_reads() -> Iterator[set[str]]:
    """Collect the option names (lower case, aliases too) stores look up within the block.

    A store reads its options when it is built, so a name the store opened in the block never
    looked up is one that does not apply to it (a command line can refuse it; a dictionary
    shared with delta-rs may hold such names on purpose). Only :class:`StoreOptions` records.
    """
    seen: set[str] = set()
    token = _reads.set(seen)
    try:
        yield seen
    finally:
        _reads.reset(token)


def _is_location_option(key: str) -> bool:
    """Whether option ``key`` holds an endpoint or URL (where a password must not be)."""
    return any(word in key for word in ("endpoint", "url"))


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
            named = ", ".join(safe_option_name(k) for k in unknown)  # names only, never values
            raise StoreConfigurationError(
                f"unknown option(s) {named}; known: {', '.join(sorted(known_set))}"
            )
        for key, value in self._values.items():
            if _is_location_option(key) and _userinfo_end(value) != -1:
                raise StoreConfigurationError(
                    f"option {safe_option_name(key)} carries credentials (user:password@); "
                    "pass them as their own storage options"
                )

    def __repr__(self) -> str:  # option names only: values may be credentials
        return f"StoreOptions({sorted(safe_option_name(k) for k in self._values)})"

    def get(self, key: str, *aliases: str, env: Iterable[str] = ()) -> str | None:
        """The first value found under ``key``, its aliases, then environment variables."""
        reads = _reads.get()
        if reads is not None:
            reads.update(name.lower() for name in (key, *aliases))
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
        shown = shown_value(value, key, *aliases)
        raise StoreConfigurationError(f"option {key} must be true or false, not {shown}")

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
            shown = shown_value(value, key, *aliases)
            raise StoreConfigurationError(
                f"option {key} must be an integer >= {minimum}, not {shown}"
            )
        return number


def refuse_credentials_in_uri(uri: str) -> None:
    """Refuse a table URL that carries credentials: they would be in every path, message and log.

    Raises:
        StoreConfigurationError: ``uri`` has a password or a credential query parameter; the
            message shows it redacted.
    """
    if has_credentials(uri):
        raise StoreConfigurationError(
            f"the table URL {redact_uri(uri)!r} carries credentials (user:password@ or a "
            "signature/token query parameter); pass them as storage options instead"
        )


def split_bucket_url(uri: str) -> tuple[str, str, str]:
    """Split ``scheme://bucket/key`` into (``scheme://bucket/``, bucket, key without slashes).

    Raises:
        StoreConfigurationError: There is no bucket name, or the URL carries credentials.
    """
    refuse_credentials_in_uri(uri)
    scheme, sep, rest = uri.partition("://")
    bucket, _, key = rest.partition("/")
    if not sep or not bucket:
        raise StoreConfigurationError(
            f"expected {scheme or 'scheme'}://bucket/path, got {redact_uri(uri)!r}"
        )
    return f"{scheme}://{bucket}/", bucket, key.strip("/")
