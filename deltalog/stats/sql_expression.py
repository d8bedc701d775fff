"""SQL expressions for row-level changes: ``"price * 1.1"``, ``"coalesce(s.name, t.name)"``.

What UPDATE and MERGE assign (``set={"n": "n + 1"}``), their conditions, and a merge's join
predicate are Spark SQL expressions; this module parses the part of the language a change of
rows needs into an :class:`Expr` tree that :mod:`deltalog.stats.expression_eval` evaluates over
Arrow. The grammar, loosest binding first::

    expr       := and_expr (OR and_expr)*
    and_expr   := not_expr (AND not_expr)*
    not_expr   := NOT not_expr | test
    test       := concat [ op concat | IS [NOT] NULL | IS [NOT] (TRUE|FALSE)
                         | [NOT] IN '(' expr, ... ')' | [NOT] BETWEEN concat AND concat
                         | [NOT] LIKE concat ]
    concat     := sum ('||' sum)*
    sum        := product (('+' | '-') product)*
    product    := unary (('*' | '/' | '%') unary)*
    unary      := ('-' | '+') unary | primary
    primary    := literal | name ['.' name] | function '(' [expr, ...] ')'
                | CASE [expr] (WHEN expr THEN expr)+ [ELSE expr] END
                | CAST '(' expr AS type ')' | '(' expr ')'

``op`` is one of ``= == != <> < <= > >= <=>``; names may be quoted with backticks and qualified
by a table alias (``s.id``) or name a struct field; literals are 'strings' (``''`` escapes a
quote), numbers, ``TRUE``/``FALSE``/``NULL`` and ``DATE '...'``/``TIMESTAMP '...'``. Keywords
and function names are case-insensitive. Trees are walked recursively, so their depth is limited
to :data:`MAX_DEPTH` levels, and nesting in the text to :data:`MAX_NESTING`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from deltalog.errors import InvalidExpressionError, InvalidInputError

__all__ = [
    "Binary",
    "Case",
    "Cast",
    "Column",
    "Expr",
    "Function",
    "InList",
    "IsNull",
    "Like",
    "Literal",
    "Unary",
    "column_refs",
    "conjuncts",
    "map_columns",
    "parse_expression",
]

#: Deepest an expression tree may be (a chain of ``n`` ``AND`` or ``+`` is ``n`` levels deep).
MAX_DEPTH = 200
#: Most levels of parentheses, ``NOT``, signs and calls nested in the text.
MAX_NESTING = 50

_TOKEN = re.compile(
    r"""
    (?P<ws>\s+)
  | (?P<string>'(?:[^'\\]|''|\\.)*')
  | (?P<quoted>`(?:[^`]|``)+`)
  | (?P<number>(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?[lLdD]?)
  | (?P<op><=>|==|!=|<>|<=|>=|\|\||[=<>+\-*/%])
  | (?P<punct>[(),.])
  | (?P<word>[A-Za-z_][A-Za-z0-9_]*)
    """,
    re.VERBOSE,
)
_KEYWORDS = {
    *("AND", "OR", "NOT", "IN", "IS", "NULL", "BETWEEN", "LIKE", "TRUE", "FALSE"),
    *("CASE", "WHEN", "THEN", "ELSE", "END", "CAST", "AS", "DATE", "TIMESTAMP"),
}
_COMPARISONS = {"=", "==", "!=", "<>", "<", "<=", ">", ">=", "<=>"}


class Expr:
    """A node of a parsed SQL expression."""

    def children(self) -> tuple[Expr, ...]:
        """The sub-expressions."""
        return ()


@dataclass(frozen=True, slots=True)
class Literal(Expr):
    """A literal; numbers and typed literals keep their text.

    ``kind`` is ``string``, ``number``, ``boolean``, ``null``, ``date`` or ``timestamp``.
    """

    kind: str
    value: Any

    def __str__(self) -> str:
        if self.kind == "null":
            return "NULL"
        if self.kind == "boolean":
            return "true" if self.value else "false"
        if self.kind == "number":
            return str(self.value)
        text = "'" + str(self.value).replace("'", "''") + "'"
        return {"date": "DATE ", "timestamp": "TIMESTAMP "}.get(self.kind, "") + text


@dataclass(frozen=True, slots=True)
class Column(Expr):
    """A column ``name``, maybe qualified.

    ``qualifier`` is a table alias (``s.id``) or a struct column whose field ``name`` is meant.
    """

    name: str
    qualifier: str | None = None

    def __str__(self) -> str:
        name = _quoted(self.name)
        return name if self.qualifier is None else f"{_quoted(self.qualifier)}.{name}"


@dataclass(frozen=True, slots=True)
class Unary(Expr):
    """``-x``, ``+x`` or ``NOT x``."""

    op: str
    operand: Expr

    def children(self) -> tuple[Expr, ...]:  # noqa: D102
        return (self.operand,)

    def __str__(self) -> str:
        return f"(NOT {self.operand})" if self.op == "NOT" else f"({self.op}{self.operand})"


@dataclass(frozen=True, slots=True)
class Binary(Expr):
    """``left op right``: arithmetic, ``||``, comparisons, ``AND``, ``OR``."""

    op: str
    left: Expr
    right: Expr

    def children(self) -> tuple[Expr, ...]:  # noqa: D102
        return (self.left, self.right)

    def __str__(self) -> str:
        return f"({self.left} {self.op} {self.right})"


@dataclass(frozen=True, slots=True)
class IsNull(Expr):
    """``x IS [NOT] NULL``."""

    operand: Expr
    negated: bool = False

    def children(self) -> tuple[Expr, ...]:  # noqa: D102
        return (self.operand,)

    def __str__(self) -> str:
        return f"({self.operand} IS {'NOT ' if self.negated else ''}NULL)"


@dataclass(frozen=True, slots=True)
class InList(Expr):
    """``x [NOT] IN (a, b, ...)``."""

    operand: Expr
    items: tuple[Expr, ...]
    negated: bool = False

    def children(self) -> tuple[Expr, ...]:  # noqa: D102
        return (self.operand, *self.items)

    def __str__(self) -> str:
        inner = ", ".join(str(i) for i in self.items)
        return f"({self.operand} {'NOT IN' if self.negated else 'IN'} ({inner}))"


@dataclass(frozen=True, slots=True)
class Like(Expr):
    """``x [NOT] LIKE pattern``."""

    operand: Expr
    pattern: Expr
    negated: bool = False

    def children(self) -> tuple[Expr, ...]:  # noqa: D102
        return (self.operand, self.pattern)

    def __str__(self) -> str:
        return f"({self.operand} {'NOT LIKE' if self.negated else 'LIKE'} {self.pattern})"


@dataclass(frozen=True, slots=True)
class Case(Expr):
    """``CASE WHEN c THEN v ... [ELSE e] END`` (a simple ``CASE x WHEN`` becomes equalities)."""

    branches: tuple[tuple[Expr, Expr], ...]
    default: Expr | None = None

    def children(self) -> tuple[Expr, ...]:  # noqa: D102
        flat = [e for pair in self.branches for e in pair]
        return (*flat, *([self.default] if self.default is not None else []))

    def __str__(self) -> str:
        whens = " ".join(f"WHEN {c} THEN {v}" for c, v in self.branches)
        default = f" ELSE {self.default}" if self.default is not None else ""
        return f"CASE {whens}{default} END"


@dataclass(frozen=True, slots=True)
class Cast(Expr):
    """``CAST(x AS type)``; ``type`` as written (lower case), e.g. ``decimal(10,2)``."""

    operand: Expr
    type_name: str

    def children(self) -> tuple[Expr, ...]:  # noqa: D102
        return (self.operand,)

    def __str__(self) -> str:
        return f"CAST({self.operand} AS {self.type_name.upper()})"


@dataclass(frozen=True, slots=True)
class Function(Expr):
    """``name(args...)``; ``name`` in lower case."""

    name: str
    args: tuple[Expr, ...]

    def children(self) -> tuple[Expr, ...]:  # noqa: D102
        return self.args

    def __str__(self) -> str:
        return f"{self.name}({', '.join(str(a) for a in self.args)})"


def column_refs(expr: Expr) -> list[Column]:
    """Every column reference in ``expr``, in order of appearance (walked without recursion)."""
    out: list[Column] = []
    stack = [expr]
    while stack:
        node = stack.pop()
        if isinstance(node, Column):
            out.append(node)
        stack.extend(reversed(node.children()))
    return out


def conjuncts(expr: Expr) -> list[Expr]:
    """The top-level ``AND`` operands of ``expr``, in order (``[expr]`` when it is no AND)."""
    out: list[Expr] = []
    stack = [expr]
    while stack:
        node = stack.pop()
        if isinstance(node, Binary) and node.op == "AND":
            stack += [node.right, node.left]
        else:
            out.append(node)
    return out


def map_columns(expr: Expr, change: Callable[[Column], Expr]) -> Expr:
    """``expr`` with every column reference replaced by ``change(reference)``."""
    if isinstance(expr, Column):
        return change(expr)
    if isinstance(expr, Literal):
        return expr
    if isinstance(expr, Unary):
        return Unary(expr.op, map_columns(expr.operand, change))
    if isinstance(expr, Binary):
        return Binary(expr.op, map_columns(expr.left, change), map_columns(expr.right, change))
    if isinstance(expr, IsNull):
        return IsNull(map_columns(expr.operand, change), expr.negated)
    if isinstance(expr, InList):
        items = tuple(map_columns(i, change) for i in expr.items)
        return InList(map_columns(expr.operand, change), items, expr.negated)
    if isinstance(expr, Like):
        return Like(
            map_columns(expr.operand, change), map_columns(expr.pattern, change), expr.negated
        )
    if isinstance(expr, Case):
        branches = tuple((map_columns(c, change), map_columns(v, change)) for c, v in expr.branches)
        default = None if expr.default is None else map_columns(expr.default, change)
        return Case(branches, default)
    if isinstance(expr, Cast):
        return Cast(map_columns(expr.operand, change), expr.type_name)
    if isinstance(expr, Function):
        return Function(expr.name, tuple(map_columns(a, change) for a in expr.args))
    raise TypeError(f"unknown expression node {type(expr).__name__}")


def parse_expression(text: str, *, error: type[InvalidInputError] = InvalidExpressionError) -> Expr:
    """Parse SQL expression text.

    Args:
        text: The expression.
        error: The error class to raise (``InvalidPredicateError`` for a condition).

    Raises:
        InvalidExpressionError: (or ``error``) The text is not an expression of the grammar,
            naming the position where parsing stopped.
    """
    if not isinstance(text, str):
        raise error(f"an SQL expression is text, not {type(text).__name__}")
    parser = _Parser(text, _tokenize(text, error), error)
    if parser.at_end():
        raise error("an SQL expression cannot be empty")
    expr = parser.expression()
    if not parser.at_end():
        parser.fail("unexpected text")
    if _depth(expr) > MAX_DEPTH:
        raise error(f"cannot parse {text!r:.80}: it nests deeper than {MAX_DEPTH} levels")
    return expr


def _depth(expr: Expr) -> int:
    """Levels of the tree (walked without recursion)."""
    deepest = 0
    stack = [(expr, 1)]
    while stack:
        node, depth = stack.pop()
        deepest = max(deepest, depth)
        stack.extend((child, depth + 1) for child in node.children())
    return deepest


@dataclass(frozen=True, slots=True)
class _Token:
    kind: str  # string | quoted | number | op | punct | keyword | name
    text: str
    position: int


def _tokenize(text: str, error: type[InvalidInputError]) -> list[_Token]:
    tokens: list[_Token] = []
    position = 0
    while position < len(text):
        match = _TOKEN.match(text, position)
        if match is None:
            raise error(
                f"cannot parse {text!r} at position {position}: unexpected {text[position]!r}"
            )
        kind = match.lastgroup or ""
        raw = match.group()
        if kind == "word":
            upper = raw.upper()
            token = _Token("keyword" if upper in _KEYWORDS else "name", raw, position)
            tokens.append(token)
        elif kind == "quoted":
            tokens.append(_Token("quoted", raw[1:-1].replace("``", "`"), position))
        elif kind == "string":
            body = raw[1:-1].replace("''", "'")
            body = re.sub(r"\\(.)", lambda m: {"n": "\n", "t": "\t"}.get(m[1], m[1]), body)
            tokens.append(_Token("string", body, position))
        elif kind != "ws":
            tokens.append(_Token(kind, raw, position))
        position = match.end()
    return tokens


def _quoted(name: str) -> str:
    if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name) and name.upper() not in _KEYWORDS:
        return name
    return "`" + name.replace("`", "``") + "`"


class _Parser:
    def __init__(self, text: str, tokens: list[_Token], error: type[InvalidInputError]) -> None:
        self.text = text
        self.tokens = tokens
        self.index = 0
        self.depth = 0
        self.error = error

    # ------------------------------------------------------------------ token helpers
    def at_end(self) -> bool:
        return self.index >= len(self.tokens)

    def peek(self, ahead: int = 0) -> _Token | None:
        at = self.index + ahead
        return self.tokens[at] if at < len(self.tokens) else None

    def fail(self, why: str) -> None:
        token = self.peek()
        where = f"position {token.position}" if token else "the end"
        raise self.error(f"cannot parse {self.text!r} at {where}: {why}")

    def keyword(self, word: str) -> bool:
        token = self.peek()
        if token is not None and token.kind == "keyword" and token.text.upper() == word:
            self.index += 1
            return True
        return False

    def expect_keyword(self, word: str) -> None:
        if not self.keyword(word):
            self.fail(f"expected {word}")

    def punct(self, mark: str) -> bool:
        token = self.peek()
        if token is not None and token.kind == "punct" and token.text == mark:
            self.index += 1
            return True
        return False

    def expect_punct(self, mark: str) -> None:
        if not self.punct(mark):
            self.fail(f"expected {mark!r}")

    def op(self, *ops: str) -> str | None:
        token = self.peek()
        if token is not None and token.kind == "op" and token.text in ops:
            self.index += 1
            return token.text
        return None

    def nested(self) -> None:
        self.depth += 1
        if self.depth > MAX_NESTING:
            self.fail(f"nested deeper than {MAX_NESTING} levels")

    # ------------------------------------------------------------------ grammar
    def expression(self) -> Expr:
        self.nested()
        try:
            out = self.and_expr()
            while self.keyword("OR"):
                out = Binary("OR", out, self.and_expr())
            return out
        finally:
            self.depth -= 1

    def and_expr(self) -> Expr:
        out = self.not_expr()
        while self.keyword("AND"):
            out = Binary("AND", out, self.not_expr())
        return out

    def not_expr(self) -> Expr:
        if self.keyword("NOT"):
            self.nested()
            try:
                return Unary("NOT", self.not_expr())
            finally:
                self.depth -= 1
        return self.test()

    def test(self) -> Expr:
        left = self.concat()
        op = self.op(*_COMPARISONS)
        if op is not None:
            op = {"==": "=", "<>": "!="}.get(op, op)
            return Binary(op, left, self.concat())
        if self.keyword("IS"):
            negated = self.keyword("NOT")
            if self.keyword("NULL"):
                return IsNull(left, negated)
            for word, value in (("TRUE", True), ("FALSE", False)):
                if self.keyword(word):  # x IS TRUE: true, not null
                    test: Expr = Binary("<=>", left, Literal("boolean", value))
                    return Unary("NOT", test) if negated else test
            self.fail("expected NULL, TRUE or FALSE after IS")
        negated = self.keyword("NOT")
        if self.keyword("IN"):
            self.expect_punct("(")
            items = [self.expression()]
            while self.punct(","):
                items.append(self.expression())
            self.expect_punct(")")
            return InList(left, tuple(items), negated)
        if self.keyword("BETWEEN"):
            low = self.concat()
            self.expect_keyword("AND")
            high = self.concat()
            between: Expr = Binary("AND", Binary(">=", left, low), Binary("<=", left, high))
            return Unary("NOT", between) if negated else between
        if self.keyword("LIKE"):
            return Like(left, self.concat(), negated)
        if negated:
            self.fail("expected IN, BETWEEN or LIKE after NOT")
        return left

    def concat(self) -> Expr:
        out = self.sum()
        while self.op("||"):
            out = Binary("||", out, self.sum())
        return out

    def sum(self) -> Expr:
        out = self.product()
        while (op := self.op("+", "-")) is not None:
            out = Binary(op, out, self.product())
        return out

    def product(self) -> Expr:
        out = self.unary()
        while (op := self.op("*", "/", "%")) is not None:
            out = Binary(op, out, self.unary())
        return out

    def unary(self) -> Expr:
        op = self.op("-", "+")
        if op is None:
            return self.primary()
        self.nested()
        try:
            operand = self.unary()
        finally:
            self.depth -= 1
        if op == "-" and isinstance(operand, Literal) and operand.kind == "number":
            return Literal("number", "-" + str(operand.value))
        return operand if op == "+" else Unary("-", operand)

    def primary(self) -> Expr:
        token = self.peek()
        if token is None:
            self.fail("expected a value")
        assert token is not None
        if token.kind == "punct" and token.text == "(":
            self.index += 1
            inner = self.expression()
            self.expect_punct(")")
            return inner
        if token.kind == "string":
            self.index += 1
            return Literal("string", token.text)
        if token.kind == "number":
            self.index += 1
            return Literal("number", token.text.rstrip("lLdD"))
        if token.kind == "keyword":
            return self.keyword_primary(token)
        if token.kind in ("name", "quoted"):
            return self.name_or_call(token)
        self.fail("expected a value")
        raise AssertionError("unreachable")

    def keyword_primary(self, token: _Token) -> Expr:
        word = token.text.upper()
        following = self.peek(1)
        if word in ("DATE", "TIMESTAMP") and following is not None and following.kind == "string":
            self.index += 2
            return Literal(word.lower(), following.text)
        if word in ("TRUE", "FALSE"):
            self.index += 1
            return Literal("boolean", word == "TRUE")
        if word == "NULL":
            self.index += 1
            return Literal("null", None)
        if word == "CASE":
            self.index += 1
            return self.case()
        if word == "CAST":
            self.index += 1
            return self.cast()
        if word in ("DATE", "TIMESTAMP"):  # a column named date
            return self.name_or_call(_Token("name", token.text, token.position))
        self.fail(f"unexpected {token.text}")
        raise AssertionError("unreachable")

    def name_or_call(self, token: _Token) -> Expr:
        self.index += 1
        if token.kind == "name" and self.punct("("):
            args: list[Expr] = []
            if not self.punct(")"):
                args.append(self.expression())
                while self.punct(","):
                    args.append(self.expression())
                self.expect_punct(")")
            return Function(token.text.lower(), tuple(args))
        if self.punct("."):
            field = self.peek()
            if field is None or field.kind not in ("name", "quoted", "keyword"):
                self.fail("expected a column name after '.'")
            assert field is not None
            self.index += 1
            return Column(field.text, token.text)
        return Column(token.text)

    def case(self) -> Expr:
        subject = None
        token = self.peek()
        if not (token is not None and token.kind == "keyword" and token.text.upper() == "WHEN"):
            subject = self.expression()
        branches: list[tuple[Expr, Expr]] = []
        while self.keyword("WHEN"):
            condition = self.expression()
            if subject is not None:
                condition = Binary("=", subject, condition)
            self.expect_keyword("THEN")
            branches.append((condition, self.expression()))
        if not branches:
            self.fail("expected WHEN")
        default = self.expression() if self.keyword("ELSE") else None
        self.expect_keyword("END")
        return Case(tuple(branches), default)

    def cast(self) -> Expr:
        self.expect_punct("(")
        operand = self.expression()
        self.expect_keyword("AS")
        token = self.peek()
        if token is None or token.kind not in ("name", "keyword"):
            self.fail("expected a type name")
        assert token is not None
        self.index += 1
        type_name = token.text.lower()
        if self.punct("("):
            numbers = []
            while True:
                number = self.peek()
                if number is None or number.kind != "number":
                    self.fail("expected a number in the type")
                assert number is not None
                self.index += 1
                numbers.append(number.text)
                if not self.punct(","):
                    break
            self.expect_punct(")")
            type_name += "(" + ",".join(numbers) + ")"
        self.expect_punct(")")
        return Cast(operand, type_name)
