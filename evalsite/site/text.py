"""Text a page shows from its inputs: safe markdown, displayable values, cut lengths, word diffs.

Nothing here marks text safe except :func:`markdown`, whose renderer escapes raw HTML and drops
unsafe link schemes; everything else stays plain text for Jinja's autoescape.
"""

from __future__ import annotations

import difflib
import json
import re
from dataclasses import dataclass
from typing import Any

from markdown_it import MarkdownIt
from markupsafe import Markup

_MARKDOWN = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False}).enable("table")
_TOKENS = re.compile(r"\s+|\w+|[^\w\s]")
#: Outputs longer than this are shown side by side without a word diff (difflib is quadratic).
DIFF_LIMIT_CHARS = 20_000


def markdown(text: str | None) -> Markup:
    """Render markdown with raw HTML escaped (``html: False``) and ``javascript:`` links refused."""
    return Markup(_MARKDOWN.render(text or ""))


@dataclass(frozen=True)
class ShownText:
    """A value as text for a page: ``text`` cut to a length, ``omitted`` characters left out."""

    text: str
    omitted: int = 0
    is_json: bool = False


def display(value: Any, limit: int) -> ShownText | None:
    """Strings as they are, a chat message list as ``role: content`` lines, anything else as JSON."""
    if value is None:
        return None
    is_json = False
    if isinstance(value, str):
        text = value
    elif _is_messages(value):
        text = "\n\n".join(f"{m.get('role', '?')}: {_content(m.get('content'))}" for m in value)
    else:
        text, is_json = json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True, default=str), True
    if len(text) > limit:
        return ShownText(text[:limit], len(text) - limit, is_json)
    return ShownText(text, 0, is_json)


def plain(value: Any) -> str:
    """The value as one comparable string (used to decide whether outputs differ)."""
    if value is None:
        return ""
    if isinstance(value, str):
        return " ".join(value.split())
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)


def _is_messages(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(m, dict) and "content" in m for m in value)


def _content(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(str(part.get("text", "")) if isinstance(part, dict) else str(part) for part in content)
    return json.dumps(content, ensure_ascii=False, default=str)


@dataclass(frozen=True)
class DiffPiece:
    """A run of text that both sides share (``same``), or that only the left (``del``) or the right (``ins``) has."""

    kind: str
    text: str


def word_diff(left: str, right: str) -> list[DiffPiece] | None:
    """Word-level diff from ``left`` to ``right``; ``None`` when either side is too long to diff."""
    if len(left) > DIFF_LIMIT_CHARS or len(right) > DIFF_LIMIT_CHARS:
        return None
    a, b = _TOKENS.findall(left), _TOKENS.findall(right)
    pieces: list[DiffPiece] = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if op == "equal":
            pieces.append(DiffPiece("same", "".join(a[i1:i2])))
            continue
        if i2 > i1:
            pieces.append(DiffPiece("del", "".join(a[i1:i2])))
        if j2 > j1:
            pieces.append(DiffPiece("ins", "".join(b[j1:j2])))
    return pieces
