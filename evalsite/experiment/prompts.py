"""Render a manifest's prompt for one row in a sandboxed Jinja environment.

Prompts are user-supplied templates that see dataset rows, so they run sandboxed: a template
cannot reach Python internals or the file system.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from evalsite.errors import ManifestError


@lru_cache(maxsize=1)
def _environment():
    """The sandbox, made on first use: a run without prompt templates never imports Jinja."""
    from jinja2 import StrictUndefined
    from jinja2.sandbox import SandboxedEnvironment

    return SandboxedEnvironment(undefined=StrictUndefined, keep_trailing_newline=True)


@lru_cache(maxsize=256)
def _template(source: str):
    from jinja2 import TemplateError

    try:
        return _environment().from_string(source)
    except TemplateError as exc:
        raise ManifestError(f"prompt: invalid template: {exc}") from None


def template_problems(prompt: Any) -> list[str]:
    """Syntax errors in a manifest's prompt (a template or a list of messages), by key path."""
    if prompt is None:
        return []
    sources = [("prompt", prompt)] if isinstance(prompt, str) else [
        (f"prompt[{index}].content", message["content"]) for index, message in enumerate(prompt)
    ]
    from jinja2 import TemplateSyntaxError

    problems = []
    for where, source in sources:
        try:
            _environment().parse(source)
        except TemplateSyntaxError as exc:
            problems.append(f"{where}: invalid template on line {exc.lineno}: {exc.message}")
    return problems


def render_template(source: str, variables: dict) -> str:
    from jinja2 import TemplateError

    try:
        return _template(source).render(**variables)
    except TemplateError as exc:
        raise ManifestError(f"prompt: cannot render: {exc}") from None


def render_input(prompt: Any, row: dict, variables: dict | None = None) -> Any:
    """The input a target receives: the rendered prompt, else the row's ``input`` (text or messages)."""
    context = {**row, **(variables or {})}
    if prompt is None:
        if "input" in row:
            return row["input"]
        if "text" in row:
            return row["text"]
        raise ManifestError("prompt: the row has no 'input' field, so the manifest needs a 'prompt' template")
    if isinstance(prompt, str):
        return render_template(prompt, context)
    return [{**message, "content": render_template(message["content"], context)} for message in prompt]
