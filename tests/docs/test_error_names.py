"""The errors the docs name are the errors the code raises, and every public error is documented.

A name that ends in ``Error`` or ``Exception`` in the README, CONTRIBUTING, CHANGELOG or a docs
page must be a public class of ``deltalog.errors`` (what users catch), or be written qualified
as a log store's (``deltalog.logstores.errors.StoreThrottledError``), or be Python's own
(``ValueError``) or another system's, listed in ``EXTERNAL`` with its owner. Every public class
of ``deltalog.errors`` must be explained in ``docs/errors.md`` and importable from
``deltalog``; every ``check`` finding code must be in ``docs/check.md``.
"""

from __future__ import annotations

import builtins
import inspect
import re
from pathlib import Path

import pytest
from docsnippets import ROOT, pages

import deltalog
import deltalog.errors
import deltalog.logstores.errors
from deltalog.check.findings import CODES

#: Names of other systems' errors the docs may mention, with whose they are.
EXTERNAL = {
    "ConditionalCheckFailedException": "DynamoDB's answer to a conditional PutItem that lost",
    "FileAlreadyExistsException": "Hadoop's, in delta-spark's log stores",
    "ArrowInvalid": "pyarrow's",
    "DeltaError": "delta-rs's (the deltalake package), quoted in docs/compat.md's example run",
}

_QUALIFIED = re.compile(
    r"\b(?P<module>(?:deltalog\.)?(?:logstores(?:\.errors)?|errors))\.(?P<name>[A-Z]\w*)"
)
_IMPORT = re.compile(
    r"\bfrom\s+(?P<module>deltalog\.(?:logstores(?:\.errors)?|errors))\s+import\s+"
    r"(?P<names>\([^)]*\)|[\w ,]+)"
)
_BARE = re.compile(r"(?<![\w.])(?P<name>[A-Z][A-Za-z0-9]*(?:Error|Exception))\b")


def _public_errors(module: object) -> dict[str, type]:
    return {
        name: value
        for name, value in vars(module).items()
        if inspect.isclass(value)
        and issubclass(value, BaseException)
        and not name.startswith("_")
        and value.__module__ == getattr(module, "__name__", "")
    }


ERRORS = _public_errors(deltalog.errors)
STORE_ERRORS = _public_errors(deltalog.logstores.errors)


def _text(page: Path) -> str:
    """The page's own words: mkdocstrings directives (``::: module``) are not names."""
    return "\n".join(line for line in page.read_text().splitlines() if not line.startswith(":::"))


def _unknown(module: str, name: str) -> list[str]:
    """``[module.name]`` if that module does not define that error, else ``[]``."""
    if "logstores" in module:
        known = STORE_ERRORS
        if not module.endswith("errors"):  # deltalog.logstores re-exports some of them
            known = {n: c for n, c in STORE_ERRORS.items() if hasattr(deltalog.logstores, n)}
        if not name.endswith(("Error", "Exception")):
            return []  # deltalog.logstores.LocalLogStore and other classes
    else:
        known = ERRORS
    return [] if name in known else [f"{module}.{name}"]


def wrong_names(text: str) -> list[str]:
    """Error names in ``text`` that the code does not define where the text says."""
    wrong = []
    imported = set()  # a page's code may use what it imported, unqualified
    for match in _IMPORT.finditer(text):  # from deltalog.logstores.errors import A, B
        module = match.group("module")
        for name in re.findall(r"[A-Za-z_]\w*", match.group("names")):
            wrong += _unknown(module, name)
            imported.add(name)
    text = _IMPORT.sub("", text)
    for match in _QUALIFIED.finditer(text):
        wrong += _unknown(match.group("module"), match.group("name"))
    for match in _BARE.finditer(_QUALIFIED.sub("", text)):
        name = match.group("name")
        if name in ERRORS or name in EXTERNAL or name in imported:
            continue
        if isinstance(getattr(builtins, name, None), type):
            continue
        hint = f" (a log store's: write it deltalog.logstores.errors.{name})"
        wrong.append(name + (hint if name in STORE_ERRORS else ""))
    return wrong


@pytest.mark.parametrize("page", [p.relative_to(ROOT).as_posix() for p in pages()])
def test_every_error_named_exists(page: str) -> None:
    wrong = sorted(set(wrong_names(_text(ROOT / page))))
    assert not wrong, f"{page} names errors deltalog.errors does not have: {wrong}"


def test_the_check_catches_names_that_do_not_exist() -> None:
    text = "raises `UnsafeStoreConfigurationError`, `MissingDependencyError` or `NoSuchError`"
    assert wrong_names(text) == [
        "UnsafeStoreConfigurationError (a log store's: write it "
        "deltalog.logstores.errors.UnsafeStoreConfigurationError)",
        "MissingDependencyError (a log store's: write it "
        "deltalog.logstores.errors.MissingDependencyError)",
        "NoSuchError",
    ]
    assert wrong_names("`deltalog.logstores.errors.NoSuchError`, `deltalog.errors.Nope`") == [
        "deltalog.logstores.errors.NoSuchError",
        "deltalog.errors.Nope",
    ]
    fine = (
        "`UnsafeStorageError` (a `ValueError`), `deltalog.logstores.errors.StoreThrottledError`,"
        " `ConcurrentAppendException`, DynamoDB's `ConditionalCheckFailedException`"
    )
    assert wrong_names(fine) == []


def test_every_public_error_is_documented() -> None:
    guide = _text(ROOT / "docs" / "errors.md")
    missing = sorted(name for name in ERRORS if not re.search(rf"`{name}`", guide))
    assert not missing, f"docs/errors.md does not explain: {missing}"


def test_every_public_error_is_importable_from_deltalog() -> None:
    missing = sorted(
        name for name, cls in ERRORS.items() if getattr(deltalog, name, None) is not cls
    )
    assert not missing, f"from deltalog import ... fails for {missing}"
    assert set(ERRORS) <= set(deltalog.__all__)


def test_every_check_code_is_documented() -> None:
    page = _text(ROOT / "docs" / "check.md")
    missing = sorted(code for code in CODES if f"`{code}`" not in page)
    assert not missing, f"docs/check.md does not list: {missing}"
