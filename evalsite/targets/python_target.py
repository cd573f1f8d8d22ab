"""The ``python:module:function`` target: call a sync or async function from the project.

The function receives keyword arguments it declares among ``input``, ``row``, ``params`` and
``repeat`` and returns a string (the output) or a dict ``{output, input_tokens, output_tokens,
cost_usd, finish_reason}``. The module is imported with the project root first on ``sys.path``.
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
import sys
from pathlib import Path
from typing import Any, Callable

from evalsite.errors import TargetError
from evalsite.targets.base import TargetRequest, TargetResult, register_target

RESULT_KEYS = ("output", "input_tokens", "output_tokens", "cost_usd", "finish_reason")


def load_callable(spec: str, project_root: Path, what: str) -> Callable:
    """Import ``module:function`` relative to the project root."""
    module_name, _, function_name = spec.partition(":")
    if not module_name or not function_name:
        raise TargetError(f"{what} {spec!r}: expected 'module:function'")
    root = str(project_root)
    if root not in sys.path:
        sys.path.insert(0, root)
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise TargetError(f"{what} {spec!r}: cannot import module {module_name!r}: {exc}") from None
    function = getattr(module, function_name, None)
    if not callable(function):
        raise TargetError(f"{what} {spec!r}: module {module_name!r} has no function {function_name!r}")
    return function


class PythonFunction:
    kind = "python"

    def __init__(self, function: Callable):
        self.function = function
        accepted = inspect.signature(function).parameters
        self.takes_all = any(p.kind is p.VAR_KEYWORD for p in accepted.values())
        self.accepted = set(accepted)

    def _arguments(self, request: TargetRequest) -> dict[str, Any]:
        offered = {"input": request.input, "row": request.row, "params": request.params, "repeat": request.repeat}
        return offered if self.takes_all else {k: v for k, v in offered.items() if k in self.accepted}

    async def generate(self, request: TargetRequest) -> TargetResult:
        try:
            if inspect.iscoroutinefunction(self.function):
                value = await self.function(**self._arguments(request))
            else:
                value = await asyncio.to_thread(self.function, **self._arguments(request))
        except Exception as exc:  # the user's function failed: record it on the case
            return TargetResult(error=f"{type(exc).__name__}: {exc}")
        return _as_result(value)

    async def aclose(self) -> None:
        return None


def _as_result(value: Any) -> TargetResult:
    if isinstance(value, dict):
        unknown = set(value) - set(RESULT_KEYS)
        if unknown:
            return TargetResult(error=f"target returned unknown keys: {', '.join(sorted(unknown))}")
        return TargetResult(**value)
    return TargetResult(output=value)


@register_target("python")
def _make(rest: str, settings: dict, project_root: Path) -> PythonFunction:
    return PythonFunction(load_callable(rest, project_root, "target"))
