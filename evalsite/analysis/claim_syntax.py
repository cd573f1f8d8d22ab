"""The claim grammar: finding ``{{ claim: … }}`` / ``{{ value: … }}`` directives in markdown and
parsing them into a syntax tree (:mod:`evalsite.analysis.claims` checks them against the runs).

The grammar and the metrics are documented in docs/reference/claims.md.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from evalsite.errors import EvalsiteError

DIRECTIVE = re.compile(r"\{\{\s*(claim|value)\s*:(.*?)\}\}", re.DOTALL)
TOKEN = re.compile(r"\s*(?:(<=|>=|==|!=|[<>=(),*/+%-])|([A-Za-z0-9_][A-Za-z0-9_.@:-]*))")
NUMBER = re.compile(r"^\d+(?:\.\d+)?$")
COMPARISONS = ("<", "<=", ">", ">=", "==", "!=")
SELECTOR_KEYS = ("arm", "dataset", "run", "evaluator")
#: ``… p < 0.05 (unadjusted)``: the one pair's own test instead of the dataset's Holm family.
UNADJUSTED = "unadjusted"
#: ``judge NAME agrees with humans κ >= 0.6``: the statistics an agreement claim may bound.
AGREEMENT_STATISTICS = {"kappa": "kappa", "agreement": "raw_agreement"}
#: The symbols an agreement claim may be written with, as the tokens they stand for.
SYMBOLS = {"κ": "kappa", "≥": ">=", "≤": "<="}
#: The most operators, signs and parentheses one directive may hold. A claim states one comparison
#: in a dozen; the bound keeps its syntax tree shallow, since parsing and checking it recurse once
#: per level (a report of ``1+1+…`` thousands long ended ``check-claims`` and ``build`` in a
#: RecursionError).
MAX_OPERATORS = 200
_OPERATORS = frozenset("+-*/(")


class ClaimSyntaxError(EvalsiteError):
    """A directive does not follow the claim grammar."""


# ----------------------------------------------------------------------------- syntax tree


@dataclass(frozen=True)
class Selector:
    """Which run a metric reads: by arm (latest completed run), optionally on a dataset, or a pinned run."""

    arm: str | None = None
    dataset: str | None = None
    run: str | None = None
    evaluator: str | None = None

    def text(self) -> str:
        return ", ".join(f"{k}={getattr(self, k)}" for k in SELECTOR_KEYS if getattr(self, k))


@dataclass(frozen=True)
class Number:
    value: float


@dataclass(frozen=True)
class MetricTerm:
    name: str
    selector: Selector


@dataclass(frozen=True)
class BinaryOp:
    operator: str
    left: Expression
    right: Expression


Expression = Number | MetricTerm | BinaryOp


@dataclass(frozen=True)
class Comparison:
    left: Expression
    operator: str
    right: Expression


@dataclass(frozen=True)
class Beats:
    """``winner beats loser``: asked of the dataset's verdict (Holm over every pair its leaderboard
    shows), or with ``unadjusted`` of the one pair's own paired test (still cluster-aware)."""

    winner: Selector
    loser: Selector
    alpha: float = 0.05
    unadjusted: bool = False

    @property
    def evaluator(self) -> str | None:
        """The one evaluator both sides read (None: the case score)."""
        return self.winner.evaluator or self.loser.evaluator


@dataclass(frozen=True)
class ValuePin:
    expression: Expression
    quoted: str

    @property
    def percent(self) -> bool:
        return self.quoted.endswith("%")

    @property
    def decimals(self) -> int:
        digits = self.quoted.rstrip("%")
        return len(digits.split(".")[1]) if "." in digits else 0


@dataclass(frozen=True)
class Agrees:
    """``judge NAME agrees with humans κ >= 0.6``: the evaluator's Cohen's κ (or raw ``agreement``)
    against the human ratings, compared with a bound; ``(lower bound)`` compares the low end of its
    95% bootstrap interval instead of the estimate."""

    evaluator: str
    statistic: str  # kappa | agreement
    operator: str
    bound: float
    lower: bool = False


Claim = Comparison | Beats | ValuePin | Agrees


@dataclass(frozen=True)
class Directive:
    kind: str
    body: str
    line: int
    start: int
    end: int


# ----------------------------------------------------------------------------- parsing


class _Parser:
    def __init__(self, text: str):
        self.text = text
        self.tokens = _tokenize(text)
        self.position = 0
        if sum(token in _OPERATORS for token in self.tokens) > MAX_OPERATORS:
            raise ClaimSyntaxError(f"{text.strip()!r}: more than {MAX_OPERATORS} operators, signs and parentheses; "
                                   "a claim states one comparison")

    def peek(self, offset: int = 0) -> str | None:
        index = self.position + offset
        return self.tokens[index] if index < len(self.tokens) else None

    def take(self, expected: str | None = None) -> str:
        token = self.peek()
        if token is None or (expected is not None and token != expected):
            wanted = f"{expected!r}" if expected else "more"
            raise ClaimSyntaxError(f"{self.text.strip()!r}: expected {wanted}, found {token or 'the end'!r}")
        self.position += 1
        return token

    def done(self) -> None:
        if self.peek() is not None:
            raise ClaimSyntaxError(f"{self.text.strip()!r}: unexpected {self.peek()!r}")

    def selector_pairs(self, stop: tuple[str, ...]) -> Selector:
        values: dict[str, str] = {}
        while self.peek() is not None and self.peek() not in stop:
            key = self.take()
            if key not in SELECTOR_KEYS:
                raise ClaimSyntaxError(
                    f"{self.text.strip()!r}: unknown selector {key!r} (use {', '.join(SELECTOR_KEYS)})"
                )
            self.take("=")
            values[key] = self.take()
            if self.peek() == "," and self.peek(1) in SELECTOR_KEYS:
                self.take(",")
        if not values:
            raise ClaimSyntaxError(f"{self.text.strip()!r}: a selector needs arm=… or run=…")
        return Selector(**values)

    def expression(self) -> Expression:
        node = self.term()
        while self.peek() in ("+", "-"):
            node = BinaryOp(self.take(), node, self.term())
        return node

    def term(self) -> Expression:
        node = self.factor()
        while self.peek() in ("*", "/"):
            node = BinaryOp(self.take(), node, self.factor())
        return node

    def factor(self) -> Expression:
        token = self.take()
        if token == "(":
            node = self.expression()
            self.take(")")
            return node
        if token == "-":
            return BinaryOp("-", Number(0.0), self.factor())
        if NUMBER.match(token):
            value = float(token)
            if self.peek() == "%":
                self.take()
                value /= 100
            return Number(value)
        if token not in METRICS:
            raise ClaimSyntaxError(f"{self.text.strip()!r}: unknown metric {token!r} (known: {', '.join(sorted(METRICS))})")
        self.take("(")
        selector = self.selector_pairs(stop=(")",))
        self.take(")")
        return MetricTerm(token, selector)


def _tokenize(text: str) -> list[str]:
    tokens, position = [], 0
    while position < len(text):
        match = TOKEN.match(text, position)
        if match is None or match.end() == position:
            if text[position:].strip() == "":
                break
            raise ClaimSyntaxError(f"{text.strip()!r}: cannot read {text[position:].strip()[:20]!r}")
        tokens.append(match.group(1) or match.group(2))
        position = match.end()
    return tokens


def parse_claim(kind: str, body: str) -> Claim:
    """Parse one directive body (``kind`` is ``claim`` or ``value``)."""
    for symbol, word in SYMBOLS.items():
        body = body.replace(symbol, f" {word} ")
    parser = _Parser(body)
    if kind == "value":
        expression = parser.expression()
        parser.take("=")
        quoted = parser.take()
        if not NUMBER.match(quoted):
            raise ClaimSyntaxError(f"{body.strip()!r}: the quoted figure {quoted!r} is not a number")
        if parser.peek() == "%":
            quoted += parser.take()
        parser.done()
        return ValuePin(expression, quoted)
    if parser.peek() == "judge" and "agrees" in parser.tokens:
        return _parse_agrees(parser)
    if "beats" in parser.tokens:
        return _parse_beats(parser)
    left = parser.expression()
    operator = parser.take()
    if operator not in COMPARISONS:
        raise ClaimSyntaxError(f"{body.strip()!r}: expected a comparison ({' '.join(COMPARISONS)}), found {operator!r}")
    right = parser.expression()
    parser.done()
    return Comparison(left, operator, right)


def _parse_beats(parser: _Parser) -> Beats:
    winner = parser.selector_pairs(stop=("beats",))
    parser.take("beats")
    loser = parser.selector_pairs(stop=("on", ",", "("))
    dataset = None
    if parser.peek() == "on":
        parser.take("on")
        dataset = parser.selector_pairs(stop=(",", "(")).dataset
    alpha = 0.05
    if parser.peek() == ",":
        parser.take(",")
        parser.take("p")
        parser.take("<")
        alpha = _alpha(parser, parser.take())
    unadjusted = parser.peek() == "("
    if unadjusted:
        parser.take("(")
        parser.take(UNADJUSTED)
        parser.take(")")
    parser.done()
    if dataset:
        winner = Selector(**{**winner.__dict__, "dataset": winner.dataset or dataset})
        loser = Selector(**{**loser.__dict__, "dataset": loser.dataset or dataset})
    if winner.dataset and loser.dataset and winner.dataset != loser.dataset:
        raise ClaimSyntaxError(f"{parser.text.strip()!r}: both arms must be on one dataset "
                               f"(dataset={winner.dataset} vs dataset={loser.dataset})")
    if winner.evaluator and loser.evaluator and winner.evaluator != loser.evaluator:
        raise ClaimSyntaxError(f"{parser.text.strip()!r}: both arms must read one evaluator "
                               f"(evaluator={winner.evaluator} vs evaluator={loser.evaluator})")
    return Beats(winner, loser, alpha, unadjusted)


def _parse_agrees(parser: _Parser) -> Agrees:
    parser.take("judge")
    evaluator = parser.take()
    for word in ("agrees", "with", "humans"):
        parser.take(word)
    statistic = parser.take()
    if statistic not in AGREEMENT_STATISTICS:
        raise ClaimSyntaxError(f"{parser.text.strip()!r}: expected κ, kappa or agreement after 'humans', found {statistic!r}")
    operator = parser.take()
    if operator not in COMPARISONS:
        raise ClaimSyntaxError(f"{parser.text.strip()!r}: expected a comparison ({' '.join(COMPARISONS)}), found {operator!r}")
    negative = parser.peek() == "-" and bool(parser.take())
    token = parser.take()
    if not NUMBER.match(token):
        raise ClaimSyntaxError(f"{parser.text.strip()!r}: the bound {token!r} is not a number")
    lower = parser.peek() == "("
    if lower:
        parser.take("(")
        parser.take("lower")
        parser.take("bound")
        parser.take(")")
    parser.done()
    return Agrees(evaluator, statistic, operator, -float(token) if negative else float(token), lower)


def _alpha(parser: _Parser, token: str) -> float:
    """The bound of ``p < NUMBER``: a number strictly between 0 and 1."""
    value = float(token) if NUMBER.match(token) else math.nan
    if not 0 < value < 1:
        raise ClaimSyntaxError(f"{parser.text.strip()!r}: p < {token!r}: the bound must be a number between 0 and 1")
    return value


def find_directives(markdown: str) -> list[Directive]:
    """Every ``{{ claim: … }}`` and ``{{ value: … }}`` in a markdown text, with its line."""
    return [
        Directive(m.group(1), m.group(2), markdown.count("\n", 0, m.start()) + 1, m.start(), m.end())
        for m in DIRECTIVE.finditer(markdown)
    ]


# ----------------------------------------------------------------------------- metrics

METRICS = {
    "mean": "mean over items of the item's mean score over its repeats (evaluator=NAME reads one evaluator)",
    "pass_rate": "mean over items of the item's share of passed repeats; with evaluator=NAME that evaluator's passes / scores",
    "n": "number of items in the run",
    "errors": "number of cases whose generation failed",
    "cost_total": "total cost in USD (unknown when any case's cost is unknown)",
    "cost_per_case": "the cost of one answer to one item: total cost divided by the number of cases",
    "cost_per_item": "the cost of one item with all its repeats: total cost divided by the number of items",
    "cost_per_correct": "total cost divided by the number of passed cases",
    "latency_p50": "median latency in ms (nearest rank)",
    "latency_p95": "95th-percentile latency in ms (nearest rank)",
}
