"""Render a manifest's prompt for one row in a sandboxed Jinja environment, within a budget.

Prompts are user-supplied templates that see dataset rows, so they run sandboxed: a template
cannot reach Python internals or the file system, and ``{% include %}``/``{% import %}``/
``{% extends %}`` are refused (a prompt is one template). Each render has a budget — at most
``prompt_sandbox.RENDER_SECONDS`` of work and ``MAX_PROMPT_CHARS`` of text, no ``'x' * 3000000000``
and no call with a number above :data:`MAX_NUMBER` — so nested loops or a huge repetition stop
with an error naming the prompt instead of hanging or ending in ``MemoryError``.
"""

from __future__ import annotations

from typing import Any

from evalsite.errors import ManifestError
from evalsite.experiment.manifest_shapes import PromptSpec
from evalsite.jsonshape import JSONObject


def template_problems(prompt: Any) -> list[str]:
    """Syntax errors and refused tags in a manifest's prompt (a template or a list of messages), by key path."""
    if prompt is None:
        return []
    sources = [("prompt", prompt)] if isinstance(prompt, str) else [
        (f"prompt[{index}].content", message["content"]) for index, message in enumerate(prompt)
    ]
    from jinja2 import TemplateSyntaxError

    from evalsite.experiment import prompt_sandbox as sandbox  # Jinja, imported on first use
    problems = []
    for where, source in sources:
        try:
            refused = sandbox.refused_tag(sandbox.ENVIRONMENT.parse(source))
        except TemplateSyntaxError as exc:
            problems.append(f"{where}: invalid template on line {exc.lineno}: {exc.message}")
            continue
        if refused:
            problems.append(f"{where}: {refused}")
    return problems


def render_template(source: str, variables: JSONObject) -> str:
    from jinja2 import TemplateError

    from evalsite.experiment import prompt_sandbox as sandbox  # Jinja, imported on first use
    template, loops = sandbox.compile_template(source)
    try:
        return sandbox.bounded_render(template, variables, loops)
    except (TemplateError, sandbox.RenderBudgetError) as exc:
        raise ManifestError(f"prompt: cannot render: {exc}") from None
    except (MemoryError, RecursionError) as exc:
        raise ManifestError(f"prompt: cannot render: it needs too much memory or depth ({type(exc).__name__})") from None
    except Exception as exc:  # the template's own operation failed: 'x' * 1.5, 1 / 0, a bad method call
        raise ManifestError(f"prompt: cannot render: {type(exc).__name__}: {exc}") from None


def render_input(prompt: PromptSpec, row: JSONObject, variables: JSONObject | None = None) -> Any:
    """The input a target receives: the rendered prompt, else the row's ``input`` (text or messages)."""
    if prompt is None:
        if "input" in row:
            return row["input"]
        if "text" in row:
            return row["text"]
        raise ManifestError("prompt: the row has no 'input' field, so the manifest needs a 'prompt' template")
    context = {**row, **(variables or {})}
    if isinstance(prompt, str):
        return render_template(prompt, context)
    return [{**message, "content": render_template(message["content"], context)} for message in prompt]
