"""Text helpers shared by the text evaluators: normalisation, whole-word phrases, bounded regexes.

User-supplied patterns run through the ``regex`` package with a timeout and an input length
cap, so a catastrophically backtracking pattern records an error instead of hanging the run.
"""

from __future__ import annotations

import json
import re
import string
from functools import lru_cache
from typing import Any

import regex

from evalsite.scoring.evaluators.base import Evaluator, Outcome, ScoringError

DEFAULT_TIMEOUT_S = 1.0
DEFAULT_MAX_CHARS = 100_000
NORMALISE_PARAMS = ("ignore_case", "ignore_whitespace", "ignore_punctuation")
PATTERN_PARAMS = ("extract", "timeout", "max_chars")
_PUNCTUATION = str.maketrans("", "", string.punctuation)
_FENCE = re.compile(r"\A\s*```[ \t]*(?:json)?[ \t]*\n(.*?)\n?[ \t]*```\s*\Z", re.DOTALL | re.IGNORECASE)


def as_text(value: Any) -> str:
    """Strings as they are; ``None`` as empty; anything else as compact JSON (``480``, ``{"a":1}``)."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


def strip_fence(text: str) -> str:
    """The body of a reply that is one fenced block (```json … ``` or ``` … ```), else the text."""
    match = _FENCE.match(text)
    return match.group(1) if match else text


def normalise(text: str, *, ignore_case: bool = False, ignore_whitespace: bool = False,
              ignore_punctuation: bool = False) -> str:
    """Case-fold, drop ASCII punctuation, and collapse runs of whitespace (trimming the ends)."""
    if ignore_case:
        text = text.casefold()
    if ignore_punctuation:
        text = text.translate(_PUNCTUATION)
    if ignore_whitespace:
        text = " ".join(text.split())
    return text


def normalise_options(evaluator: Evaluator) -> dict[str, bool]:
    """The normalisation params of ``evaluator``, type-checked (all default to false)."""
    return {key: evaluator.option(key, bool, False) for key in NORMALISE_PARAMS}


def as_phrases(target: Any, what: str) -> list[str]:
    """A target that is one phrase or a list of phrases, as a list of non-empty strings."""
    phrases = target if isinstance(target, list) else [target]
    texts = [as_text(p) for p in phrases if p is not None]
    if not texts or any(not t.strip() for t in texts):
        raise ScoringError(f"{what} is empty; nothing to look for")
    return texts


@lru_cache(maxsize=4096)
def phrase_pattern(phrase: str, *, ignore_case: bool, whole_words: bool, anchored: bool = False) -> re.Pattern[str]:
    """A literal phrase that must stand as whole words: ``cat`` does not match ``concatenate``.

    A boundary is required only at an edge that is a word character, so ``#1234`` still matches
    in ``order #1234.``; inner whitespace matches any run of whitespace.
    """
    words = phrase.strip().split()
    body = r"\s+".join(re.escape(w) for w in words)
    if whole_words and re.match(r"\w", words[0]):
        body = r"(?<!\w)" + body
    if whole_words and re.search(r"\w$", words[-1]):
        body += r"(?!\w)"
    return re.compile(body, re.IGNORECASE if ignore_case else 0)


def compile_user_pattern(pattern: Any, *, ignore_case: bool = False, key: str = "pattern") -> regex.Pattern:
    """Compile a user's pattern or raise ``ValueError`` naming the key and the problem."""
    if not isinstance(pattern, str) or not pattern:
        raise ValueError(f"{key}: needs a non-empty regular expression, got {pattern!r}")
    try:
        return regex.compile(pattern, regex.IGNORECASE if ignore_case else 0)
    except regex.error as exc:
        raise ValueError(f"{key}: invalid regular expression {pattern!r}: {exc}") from None


def bounded_search(pattern: regex.Pattern, text: str, *, timeout: float, max_chars: int,
                   full: bool = False) -> regex.Match | None:
    """``pattern.search`` (or ``fullmatch``) with a deadline and a length cap; either one
    exceeded raises :class:`ScoringError` so only this evaluator's score records the error."""
    if len(text) > max_chars:
        raise ScoringError(f"output has {len(text)} characters, more than max_chars {max_chars}; raise max_chars")
    try:
        return (pattern.fullmatch if full else pattern.search)(text, timeout=timeout)
    except TimeoutError:
        raise ScoringError(
            f"pattern {pattern.pattern!r} ran longer than {timeout}s on this output "
            "(catastrophic backtracking?); simplify it or raise timeout"
        ) from None


class PatternLimits:
    """The ``timeout`` and ``max_chars`` params of an evaluator that runs user patterns."""

    def __init__(self, evaluator: Evaluator) -> None:
        self.timeout: float = evaluator.option("timeout", (int, float), DEFAULT_TIMEOUT_S)
        self.max_chars: int = evaluator.option("max_chars", int, DEFAULT_MAX_CHARS)
        if not 0 < self.timeout < float("inf") or self.max_chars <= 0:
            raise ValueError("timeout and max_chars: need finite numbers above 0")

    def search(self, pattern: regex.Pattern, text: str, full: bool = False) -> regex.Match | None:
        return bounded_search(pattern, text, timeout=self.timeout, max_chars=self.max_chars, full=full)


class Extractor:
    """The optional ``extract`` param: a pattern whose first group (else whole match) is kept."""

    def __init__(self, evaluator: Evaluator) -> None:
        self.limits = PatternLimits(evaluator)
        self.source: str | None = evaluator.option("extract", str)
        self.pattern = None if self.source is None else compile_user_pattern(self.source, key="extract")

    def __call__(self, text: str) -> str | None:
        """The extracted text, or None when the pattern finds nothing (the output then fails)."""
        if self.pattern is None:
            return text
        match = self.limits.search(self.pattern, text)
        if match is None:
            return None
        found: str = match.group(1) if self.pattern.groups else match.group(0)
        return found

    @property
    def miss(self) -> Outcome:
        return Outcome.check(False, f"extract pattern {self.source!r} found nothing in the output")
