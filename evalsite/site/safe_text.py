"""Text a page shows from its inputs: safe markdown, displayable values, cut lengths (word diffs are drawn in the browser, static/site.js).

Nothing here marks text safe except :func:`markdown`, whose renderer escapes raw HTML and drops
unsafe link schemes; everything else stays plain text for Jinja's autoescape.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from markupsafe import Markup

if TYPE_CHECKING:
    from markdown_it import MarkdownIt


def project_relative(text: str, root: Path) -> str:
    """``text`` (an error message) with the project's absolute folder left out, so the paths in it
    read relative to the project: a published page never shows where the project sits on a disk."""
    for folder in {str(root), str(root.resolve())}:
        text = text.replace(folder + os.sep, "").replace(folder, ".")
    return text


def markdown(text: str | None) -> Markup:
    """Render markdown with raw HTML escaped (``html: False``) and ``javascript:`` links refused."""
    return Markup(_renderer().render(text)) if text else Markup("")


@cache
def _renderer() -> MarkdownIt:
    """The markdown renderer, imported on the first text to render (a site with none never loads it)."""
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False}).enable("table")


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
