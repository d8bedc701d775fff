"""SQL text for partition predicates, as in ``replaceWhere``: ``"day = '2024-01-01'"``.

The grammar is the part of Spark SQL that makes sense on partition values::

    expr       := term (OR term)*
    term       := factor (AND factor)*
    factor     := NOT factor | '(' expr ')' | comparison
    comparison := name op literal | literal op name
                | name [NOT] IN '(' literal, ... ')'
                | name IS [NOT] NULL
                | name [NOT] BETWEEN literal AND literal
                | name [NOT] LIKE 'pattern'

``op`` is one of ``= == != <> < <= > >=``; names may be quoted with backticks; literals are
'strings' (``''`` escapes a quote), numbers, ``TRUE``/``FALSE``, ``NULL``, and ``DATE '...'`` /
``TIMESTAMP '...'``. Keywords are case-insensitive. Numbers and typed literals are kept as text
and parsed as the column's type when the predicate is evaluated, exactly like partition values.

Predicates are trees evaluated (and printed) recursively, so nesting is limited to
:data:`MAX_DEPTH` levels: of parentheses and ``NOT`` in the text, and of ``AND``/``OR``/``NOT``
in the resulting tree (a chain of ``n`` ``AND`` is ``n`` levels deep).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from deltalog.errors import InvalidPredicateError
from deltalog.stats.predicates import And, Comparison, In, IsNull, Like, Not, Or, Predicate

#: Deepest nesting a predicate may have (see the module docstring).
MAX_DEPTH = 200

_TOKEN = re.compile(
    r"""
    (?P<ws>\s+)
  | (?P<string>'(?:[^']|'')*')
  | (?P<quoted>`(?:[^`]|``)+`)
  | (?P<number>[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)
  | (?P<op><=>|==|!=|<>|<=|>=|=|<|>)
  | (?P<punct>[(),])
  | (?P<word>[A-Za-z_][A-Za-z0-9_]*)
    """,
    re.VERBOSE,
)
_FLIP = {"=": "=", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}
_KEYWORDS = {
    *("AND", "OR", "NOT", "IN", "IS", "NULL", "BETWEEN", "LIKE"),
    *("TRUE", "FALSE", "DATE", "TIMESTAMP"),
}


@dataclass(frozen=True, slots=True)
class _Token:
    kind: str  # string | name | number | op | punct | keyword
    text: str
    position: int


class Unquoted(str):
    """A literal written without quotes: a number, ``TRUE``/``FALSE``, ``DATE``/``TIMESTAMP '...'``.

    Kept as text like a quoted one, but compared with a string column Spark casts the column to
    the literal's type (``'05' = 5`` holds), so string bounds cannot judge it.
    """

    __slots__ = ()


@dataclass(frozen=True, slots=True)
class _Literal:
    value: Any


def parse_predicate(text: str, *, spark: bool = False) -> Predicate:
    """Parse SQL predicate text into a :class:`~deltalog.stats.predicates.Predicate`.

    Args:
        text: The predicate text.
        spark: The text is Spark SQL that Spark also evaluates: a string literal whose reading
            differs between Spark and this grammar (a backslash, which Spark unescapes, or a
            doubled quote) is refused rather than read another way.

    Raises:
        InvalidPredicateError: The text is not a predicate of the supported grammar, naming
            the position where parsing stopped.
    """
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidPredicateError(f"predicate {text!r:.80} is not valid Unicode") from exc
    tokens = _tokenize(text)
    if spark:
        for token in tokens:
            if token.kind == "string" and ("\\" in token.text or "'" in token.text):
                raise InvalidPredicateError(
                    f"cannot judge predicate {text!r:.80}: Spark reads the escapes of the "
                    f"string at position {token.position} its own way"
                )
    parser = _Parser(text, tokens)
    predicate = parser.expression()
    if not parser.at_end():
        parser.fail("unexpected text")
    if _depth(predicate) > MAX_DEPTH:
        raise InvalidPredicateError(
            f"cannot parse predicate {text!r:.80}: it nests deeper than {MAX_DEPTH} levels"
        )
    return predicate


def _depth(predicate: Predicate) -> int:
    """Levels of ``AND``/``OR``/``NOT`` in the tree (walked without recursion)."""
    deepest = 0
    stack = [(predicate, 1)]
    while stack:
        node, depth = stack.pop()
        deepest = max(deepest, depth)
        if isinstance(node, And | Or):
            stack += [(node.left, depth + 1), (node.right, depth + 1)]
        elif isinstance(node, Not):
            stack.append((node.operand, depth + 1))
    return deepest


def _tokenize(text: str) -> list[_Token]:
    tokens: list[_Token] = []
    position = 0
    while position < len(text):
        match = _TOKEN.match(text, position)
        if match is None:
            raise InvalidPredicateError(
                f"cannot parse predicate {text!r} at position {position}: "
                f"unexpected {text[position]!r}"
            )
        kind = match.lastgroup or ""
        raw = match.group()
        if kind == "word":
            upper = raw.upper()
            tokens.append(
                _Token("keyword", upper, position)
                if upper in _KEYWORDS
                else _Token("name", raw, position)
            )
        elif kind == "quoted":
            tokens.append(_Token("name", raw[1:-1].replace("``", "`"), position))
        elif kind == "string":
            tokens.append(_Token("string", raw[1:-1].replace("''", "'"), position))
        elif kind == "op":
            if raw == "<=>":
                raise InvalidPredicateError(
                    f"cannot parse predicate {text!r} at position {position}: the null-safe "
                    "'<=>' is not supported"
                )
            tokens.append(_Token("op", {"==": "=", "<>": "!="}.get(raw, raw), position))
        elif kind != "ws":
            tokens.append(_Token(kind, raw, position))
        position = match.end()
    return tokens


class _Parser:
    def __init__(self, text: str, tokens: list[_Token]) -> None:
        self.text = text
        self.tokens = tokens
        self.index = 0
        self.nesting = 0

    # ------------------------------------------------------------------ token helpers
    def at_end(self) -> bool:
        return self.index >= len(self.tokens)

    def peek(self) -> _Token | None:
        return None if self.at_end() else self.tokens[self.index]

    def fail(self, why: str) -> None:
        token = self.peek()
        where = f"position {token.position}" if token else "the end"
        raise InvalidPredicateError(f"cannot parse predicate {self.text!r} at {where}: {why}")

    def take(self, kind: str, text: str | None = None) -> _Token:
        token = self.peek()
        if token is None or token.kind != kind or (text is not None and token.text != text):
            self.fail(f"expected {text or kind}")
        assert token is not None
        self.index += 1
        return token

    def accept(self, kind: str, text: str) -> bool:
        token = self.peek()
        if token is not None and token.kind == kind and token.text == text:
            self.index += 1
            return True
        return False

    # ------------------------------------------------------------------ grammar
    def expression(self) -> Predicate:
        out = self.term()
        while self.accept("keyword", "OR"):
            out = Or(out, self.term())
        return out

    def term(self) -> Predicate:
        out = self.factor()
        while self.accept("keyword", "AND"):
            out = And(out, self.factor())
        return out

    def factor(self) -> Predicate:
        if self.nesting >= MAX_DEPTH:
            self.fail(f"nested deeper than {MAX_DEPTH} levels")
        self.nesting += 1
        try:
            if self.accept("keyword", "NOT"):
                return Not(self.factor())
            if self.accept("punct", "("):
                inner = self.expression()
                self.take("punct", ")")
                return inner
            return self.comparison()
        finally:
            self.nesting -= 1

    def is_name(self) -> bool:
        """Whether a column name comes next (``date`` is one unless a string follows it)."""
        token = self.peek()
        if token is None:
            return False
        if token.kind == "keyword" and token.text in ("DATE", "TIMESTAMP"):
            following = self.tokens[self.index + 1] if self.index + 1 < len(self.tokens) else None
            return following is None or following.kind != "string"
        return token.kind == "name"

    def name(self) -> str:
        if not self.is_name():
            self.fail("expected a column name")
        token = self.tokens[self.index]
        self.index += 1
        if token.kind == "keyword":  # as written, not upper-cased
            return self.text[token.position : token.position + len(token.text)]
        return token.text

    def comparison(self) -> Predicate:
        if self.peek() is not None and not self.is_name():
            value = self.literal()
            op = self.take("op").text
            name = self.name()
            return Comparison(name, _FLIP[op], value.value)
        name = self.name()
        if self.accept("keyword", "IS"):
            negated = self.accept("keyword", "NOT")
            self.take("keyword", "NULL")
            return IsNull(name, negated=negated)
        negated = self.accept("keyword", "NOT")
        if self.accept("keyword", "IN"):
            self.take("punct", "(")
            values = [self.literal().value]
            while self.accept("punct", ","):
                values.append(self.literal().value)
            self.take("punct", ")")
            return In(name, tuple(values), negated=negated)
        if self.accept("keyword", "BETWEEN"):
            low = self.literal().value
            self.take("keyword", "AND")
            high = self.literal().value
            between = And(Comparison(name, ">=", low), Comparison(name, "<=", high))
            return Not(between) if negated else between
        if self.accept("keyword", "LIKE"):
            return Like(name, self.take("string").text, negated=negated)
        if negated:
            self.fail("expected IN, BETWEEN or LIKE after NOT")
        op = self.take("op").text
        return Comparison(name, op, self.literal().value)

    def literal(self) -> _Literal:
        token = self.peek()
        if token is None:
            self.fail("expected a value")
        assert token is not None
        self.index += 1
        if token.kind == "string":
            return _Literal(token.text)
        if token.kind == "number":
            return _Literal(Unquoted(token.text))
        if token.kind == "keyword" and token.text in ("TRUE", "FALSE"):
            return _Literal(Unquoted(token.text.lower()))
        if token.kind == "keyword" and token.text == "NULL":
            return _Literal(None)
        if token.kind == "keyword" and token.text in ("DATE", "TIMESTAMP"):
            return _Literal(Unquoted(self.take("string").text))
        self.index -= 1
        self.fail("expected a value")
        raise AssertionError("unreachable")
