"""Map URL schemes to log store classes, importing each store only when it is used.

Built-in stores are named by dotted path so that an SDK is imported only for the scheme that
needs it. Third-party stores register under the ``deltalog.logstores`` entry-point group, with
the scheme as the entry-point name and ``module:Class`` as its value; they win over built-ins.
A store class provides ``from_uri(uri, options) -> (store, root)``.
"""

from __future__ import annotations

import functools
import importlib
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Protocol, cast

from .base import LogStore
from .errors import MissingDependencyError, UnknownSchemeError

if TYPE_CHECKING:
    from importlib.metadata import EntryPoint

ENTRY_POINT_GROUP = "deltalog.logstores"
#: The package these stores are installed under (``deltalog.logstores``).
_PACKAGE = __name__.rpartition(".")[0]
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")

#: scheme -> (``module:Class``, pip extra that brings its SDK or ``None``)
BUILTIN_STORES: dict[str, tuple[str, str | None]] = {
    "file": (f"{_PACKAGE}.local:LocalLogStore", None),
    "memory": (f"{_PACKAGE}.memory:MemoryLogStore", None),
    "s3": (f"{_PACKAGE}.s3_open:S3Stores", "s3"),
    "s3a": (f"{_PACKAGE}.s3_open:S3Stores", "s3"),
    "gs": (f"{_PACKAGE}.gcs:GCSLogStore", "gcs"),
    "az": (f"{_PACKAGE}.azure:AzureLogStore", "azure"),
    "abfs": (f"{_PACKAGE}.azure:AzureLogStore", "azure"),
    "abfss": (f"{_PACKAGE}.azure:AzureLogStore", "azure"),
}


#: pip extra -> what it installs (a missing SDK is named by its pip package, not its module).
EXTRA_PACKAGES: dict[str, str] = {
    "s3": "boto3",
    "gcs": "google-cloud-storage",
    "azure": "azure-storage-blob",
}


class _StoreFactory(Protocol):
    def from_uri(self, uri: str, options: Mapping[str, str]) -> tuple[LogStore, str]: ...


def scheme_of(uri: str) -> str:
    """Return the URL scheme of ``uri`` (RFC 3986 syntax); plain paths count as ``file``."""
    m = _SCHEME.match(uri)
    if m:
        return m.group(1).lower()
    return "file"


def _load(target: str, scheme: str, extra: str | None) -> _StoreFactory:
    module_name, _, class_name = target.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name and not exc.name.startswith((_PACKAGE, module_name)):
            if extra:
                package = EXTRA_PACKAGES.get(extra, f"the '{extra}' extra")
                message = (
                    f"the {scheme}:// log store needs {package}, which is not installed "
                    f"(Python cannot import {exc.name!r}): pip install 'deltalog[{extra}]'"
                )
            else:
                message = f"the {scheme}:// log store cannot import {exc.name!r}: install it"
            raise MissingDependencyError(message) from exc
        raise UnknownSchemeError(
            f"log store module {module_name!r} for {scheme}:// is not available"
        ) from exc
    return cast(_StoreFactory, getattr(module, class_name))


@functools.cache
def _plugins() -> tuple[EntryPoint, ...]:
    """Installed plugin stores, looked up once per process (scanning metadata takes ms)."""
    from .plugin_scan import entry_points  # importlib.metadata only if a plugin may exist

    return tuple(entry_points(group=ENTRY_POINT_GROUP))


def open_store(uri: str, options: Mapping[str, str] | None = None) -> tuple[LogStore, str]:
    """Return the log store for ``uri`` and the table root in that store's notation.

    Args:
        uri: A table location: a plain path, ``file://``, ``memory://``, ``s3://``, ``gs://``,
            ``az://``/``abfs[s]://``, or any scheme registered through the entry-point group.
        options: Store options, namespaced keys such as ``s3.endpoint``.

    Raises:
        UnknownSchemeError: No store is registered for the scheme.
        MissingDependencyError: The store's SDK is not installed; the message names the extra.
    """
    scheme = scheme_of(uri)
    for ep in _plugins():
        if ep.name == scheme:
            factory = cast(_StoreFactory, ep.load())
            return factory.from_uri(uri, dict(options or {}))
    try:
        target, extra = BUILTIN_STORES[scheme]
    except KeyError:
        known = ", ".join(sorted(BUILTIN_STORES))
        raise UnknownSchemeError(f"no log store for scheme {scheme!r} (known: {known})") from None
    return _load(target, scheme, extra).from_uri(uri, dict(options or {}))


def is_builtin(uri: str) -> bool:
    """Whether a built-in store serves ``uri`` (no plugin registered for its scheme)."""
    scheme = scheme_of(uri)
    return scheme in BUILTIN_STORES and not any(ep.name == scheme for ep in _plugins())
