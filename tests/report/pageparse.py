"""Read a report page back: every element with its attributes, as a browser's DOM has them."""

from __future__ import annotations

from html.parser import HTMLParser


class Element(dict[str, str]):
    """An element's attributes, with its tag."""

    tag: str = ""


class _Collector(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.elements: list[Element] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        element = Element((k, v or "") for k, v in attrs)
        element.tag = tag
        self.elements.append(element)

    handle_startendtag = handle_starttag


def elements(page: str) -> list[Element]:
    """Every start tag of the page, in order."""
    collector = _Collector()
    collector.feed(page)
    return collector.elements


def having(page: str, *, cls: str | None = None, id: str | None = None) -> list[Element]:
    """Elements with the class ``cls`` (one of their classes) or the id ``id``."""
    found = []
    for e in elements(page):
        by_class = cls is not None and cls in e.get("class", "").split()
        if by_class or (id is not None and e.get("id") == id):
            found.append(e)
    return found


def number(value: str | None) -> int | None:
    """A ``data-*`` number (absent: ``None``)."""
    return None if value is None or value == "" else int(value)
