"""The ``python:module:function`` target: call a sync or async function from the project.

The function receives keyword arguments it declares among ``input``, ``row``, ``params`` and
``repeat`` (and ``checkpoint``, ``{id, path}``, on a checkpoint axis) and returns a string (the output) or a dict ``{output, input_tokens, output_tokens,
cost_usd, finish_reason}``. The module is imported with the project root first on ``sys.path``.
A function that raises :class:`TransientTargetError` is retried; any other exception is
recorded as the case's error. With ``schedule.reset_state`` every case calls the function from a
copy of its module executed anew for it (:func:`fresh_callable`).
"""

from __future__ import annotations

import asyncio
import importlib.util
import inspect
from collections.abc import Callable
from pathlib import Path
from typing import Any

from evalsite.calls.targets.base import (
    TargetRequest,
    TargetResult,
    TransientTargetError,
    check_settings,
    register_target,
    result_from_value,
)
from evalsite.errors import TargetError
from evalsite.jsonshape import JSONObject, described
from evalsite.project import load_callable

OFFERED = ("input", "row", "params", "repeat", "checkpoint")  # checkpoint: only on a checkpoint axis


class PythonTarget:
    kind = "python"

    def __init__(self, function: Callable[..., Any], spec: str, project_root: Path):
        self.function = function
        self.spec, self.project_root = spec, project_root
        self.is_async = inspect.iscoroutinefunction(function)
        try:
            parameters = inspect.signature(function).parameters
        except (TypeError, ValueError) as exc:
            raise TargetError(f"target python:{spec}: cannot read the function's signature: {exc}") from None
        self.takes_all = any(p.kind is p.VAR_KEYWORD for p in parameters.values())
        self.accepted = set(parameters)
        unfillable = [
            name for name, p in parameters.items()
            if name not in OFFERED and p.default is p.empty and p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)
        ]
        if unfillable:
            raise TargetError(
                f"target python:{spec}: parameter {unfillable[0]!r} has no default and is not one of "
                f"{', '.join(OFFERED)}"
            )

    def _arguments(self, request: TargetRequest) -> dict[str, Any]:
        offered = {"input": request.input, "row": request.row, "params": request.params, "repeat": request.repeat}
        if request.checkpoint is not None:
            offered["checkpoint"] = request.checkpoint
        return offered if self.takes_all else {k: v for k, v in offered.items() if k in self.accepted}

    async def generate(self, request: TargetRequest) -> TargetResult:
        try:
            if self.is_async:
                value = await self.function(**self._arguments(request))
            else:
                value = await asyncio.to_thread(self.function, **self._arguments(request))
        except TransientTargetError:
            raise
        except (Exception, SystemExit) as exc:  # the user's function failed (sys.exit() too): record it on the case
            return TargetResult(error=described(exc))
        return result_from_value(value)

    def renewed(self) -> PythonTarget:
        """The same function from a module of its own, executed anew (``schedule.reset_state``)."""
        return PythonTarget(fresh_callable(self.spec, self.project_root, "target"), self.spec, self.project_root)

    async def aclose(self) -> None:
        return None


def fresh_callable(spec: str, project_root: Path, what: str) -> Callable[..., Any]:
    """``module:function`` from a private copy of its module, executed anew: it shares no module
    state (globals, caches) with the copy ``import`` keeps or with any other fresh copy. The
    modules it imports are Python's usual shared ones."""
    load_callable(spec, project_root, what)  # importable, and names a function
    module_name, _, function_name = spec.partition(":")
    found = importlib.util.find_spec(module_name)
    if found is None or found.loader is None or not hasattr(found.loader, "exec_module"):
        raise TargetError(f"{what} {spec!r}: module {module_name!r} cannot be loaded afresh (schedule.reset_state)")
    module = importlib.util.module_from_spec(found)
    try:
        found.loader.exec_module(module)
    except Exception as exc:  # the user's module failed while running again
        raise TargetError(f"{what} {spec!r}: loading {module_name!r} afresh failed: {type(exc).__name__}: {exc}") from None
    function: Callable[..., Any] = getattr(module, function_name)
    return function


@register_target("python")
def _make(rest: str, settings: JSONObject, project_root: Path) -> PythonTarget:
    check_settings("python", settings, set())
    return PythonTarget(load_callable(rest, project_root, "target"), rest, project_root)
