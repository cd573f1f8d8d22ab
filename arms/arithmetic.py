"""Three offline "systems under test" for the bundled arithmetic example.

They stand in for models so the example runs with no key and no network, and each shows
something a real comparison meets:

- ``careful`` applies operator precedence but writes thousands with a separator ("1,234"),
  so it is clearly best yet not perfect;
- ``left_to_right`` ignores precedence, so it fails every two-step question;
- ``sampler`` answers correctly with probability ``params.accuracy``, drawn from a seeded
  generator per item and repeat: its score moves between repeats, and on average it lands
  close to ``left_to_right`` (a difference within noise).
"""

from __future__ import annotations

import random
import re

QUESTION = re.compile(r"What is (.+)\?")
TOKEN = re.compile(r"\d+|[+\-*]")


def _tokens(text: str) -> list[str]:
    match = QUESTION.search(text)
    if match is None:
        raise ValueError(f"not an arithmetic question: {text!r}")
    return TOKEN.findall(match.group(1))


def _apply(left: int, operator: str, right: int) -> int:
    return {"+": left + right, "-": left - right, "*": left * right}[operator]


def _with_precedence(tokens: list[str]) -> int:
    terms, operators = [int(tokens[0])], []
    for operator, number in zip(tokens[1::2], map(int, tokens[2::2])):
        if operator == "*":
            terms[-1] *= number
        else:
            operators.append(operator)
            terms.append(number)
    total = terms[0]
    for operator, term in zip(operators, terms[1:]):
        total = _apply(total, operator, term)
    return total


def careful(input: str) -> str:
    return f"{_with_precedence(_tokens(input)):,}"


def left_to_right(input: str) -> str:
    tokens = _tokens(input)
    total = int(tokens[0])
    for operator, number in zip(tokens[1::2], map(int, tokens[2::2])):
        total = _apply(total, operator, number)
    return str(total)


def sampler(input: str, row: dict, params: dict, repeat: int) -> dict:
    answer = _with_precedence(_tokens(input))
    rng = random.Random(f"{params.get('seed', 0)}:{row['id']}:{repeat}")
    if rng.random() >= params.get("accuracy", 0.67):
        answer += rng.choice((-1, 1)) * rng.randint(1, 9)
    words = len(input.split())
    return {"output": str(answer), "input_tokens": words, "output_tokens": 1}
