"""The prompt sandbox: a Jinja environment that refuses Python internals, other templates and
unbounded allocation, and a render budget of time and size (see :mod:`evalsite.experiment.prompts`).

Kept apart so that importing the experiment layer does not import Jinja: a run whose manifest
has no prompt template never loads it.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from functools import lru_cache
from types import FrameType
from typing import Any, TypeAlias

from jinja2 import StrictUndefined, Template, TemplateError, nodes
from jinja2.exceptions import SecurityError
from jinja2.runtime import Context
from jinja2.sandbox import SandboxedEnvironment

from evalsite.errors import ManifestError
from evalsite.jsonshape import JSONObject

RENDER_SECONDS = 2.0
MAX_PROMPT_CHARS = 5_000_000
MAX_NUMBER = 10_000_000
REFUSED_TAGS = {nodes.Include: "include", nodes.Import: "import", nodes.FromImport: "from … import",
                nodes.Extends: "extends"}


#: What :func:`sys.settrace` takes: called on each event, it returns the frame's local tracer.
Tracer: TypeAlias = "Callable[[FrameType, str, Any], Tracer | None]"


class RenderBudgetError(Exception):
    """A render went past its time or size budget."""


class PromptEnvironment(SandboxedEnvironment):
    """The sandbox, plus guards on the operations that allocate without bound."""

    intercepted_binops = frozenset({"*", "**"})

    def call_binop(self, context: Context, operator: str, left: Any, right: Any) -> Any:
        if operator == "*":
            for sequence, count in ((left, right), (right, left)):
                if isinstance(sequence, (str, list, tuple)) and _is_int(count) and len(sequence) * count > MAX_PROMPT_CHARS:
                    raise SecurityError(f"{_short(sequence)} * {count} would be longer than {MAX_PROMPT_CHARS} characters")
        if operator == "**" and _is_number(left) and _is_number(right) and abs(left) > 1 and abs(right) > 64:
            raise SecurityError(f"{left} ** {right} is too large a power")
        return super().call_binop(context, operator, left, right)

    def call(__self, __context: Context, __obj: Any, *args: Any, **kwargs: Any) -> Any:  # jinja's own signature
        for value in (*args, *kwargs.values()):
            if _is_int(value) and abs(value) > MAX_NUMBER:
                raise SecurityError(f"a call with {value}, above {MAX_NUMBER}, is refused (it could allocate without bound)")
        return super().call(__context, __obj, *args, **kwargs)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 20 else text[:19] + "…"


ENVIRONMENT = PromptEnvironment(undefined=StrictUndefined, keep_trailing_newline=True)


def refused_tag(tree: nodes.Template) -> str | None:
    """``{% include %}`` and friends name other templates, which a prompt does not have."""
    for kind, tag in REFUSED_TAGS.items():
        if tree.find(kind) is not None:
            return f"{{% {tag} %}} is not supported: a prompt is one template (write the text in, or pass it as a variable)"
    return None


@lru_cache(maxsize=256)
def compile_template(source: str) -> tuple[Template, bool]:
    """The compiled template, and whether it loops (only a loop can run long: Jinja has no
    ``while``, and recursion through macros ends in ``RecursionError``)."""
    try:
        tree = ENVIRONMENT.parse(source)
        refused = refused_tag(tree)
        if refused:
            raise ManifestError(f"prompt: {refused}")
        return ENVIRONMENT.from_string(source), tree.find(nodes.For) is not None
    except TemplateError as exc:
        raise ManifestError(f"prompt: invalid template: {exc}") from None


def bounded_render(template: Template, variables: JSONObject, loops: bool) -> str:
    pieces: list[str] = []
    size = 0
    with _time_budget(RENDER_SECONDS) if loops else nullcontext():
        for piece in template.generate(**variables):
            size += len(piece)
            if size > MAX_PROMPT_CHARS:
                raise RenderBudgetError(f"it renders more than {MAX_PROMPT_CHARS} characters")
            pieces.append(piece)
    return "".join(pieces)


@contextmanager
def _time_budget(seconds: float) -> Iterator[None]:
    """Stop the template's own code once it has run ``seconds``: a trace function on the frames
    Jinja compiled (``<template>``) checks the clock, so even a loop that prints nothing ends."""
    deadline = time.monotonic() + seconds
    steps = 0

    def local(frame: FrameType, event: str, arg: Any) -> Tracer:
        nonlocal steps
        steps += 1
        if steps % 512 == 0 and time.monotonic() > deadline:
            raise RenderBudgetError(f"it ran longer than {seconds:g}s (nested loops?)")
        return local

    def calls(frame: FrameType, event: str, arg: Any) -> Tracer | None:
        return local if frame.f_code.co_filename == "<template>" else None

    previous = sys.gettrace()
    sys.settrace(calls)
    try:
        yield
    finally:
        sys.settrace(previous)
