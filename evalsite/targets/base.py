"""The target interface and registry."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Protocol

from evalsite.errors import TargetError


@dataclass(frozen=True)
class TargetRequest:
    """What a target is asked: the rendered input plus the row it came from."""

    input: Any
    row: dict
    params: dict
    repeat: int
    item_id: str


@dataclass
class TargetResult:
    """What a target answers. ``error`` set means the generation failed."""

    output: Any = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cost_usd: float | None = None
    finish_reason: str | None = None
    error: str | None = None
    extra: dict = field(default_factory=dict)


class Target(Protocol):
    kind: str

    async def generate(self, request: TargetRequest) -> TargetResult: ...

    async def aclose(self) -> None: ...


TargetFactory = Callable[[str, dict, Path], Target]
_FACTORIES: dict[str, TargetFactory] = {}


def register_target(kind: str):
    """Register a factory ``(spec_rest, settings, project_root) -> Target`` for ``kind``."""

    def decorate(factory: TargetFactory) -> TargetFactory:
        _FACTORIES[kind] = factory
        return factory

    return decorate


def target_kinds() -> list[str]:
    return sorted(_FACTORIES)


def make_target(spec: str, settings: dict, project_root: Path) -> Target:
    kind, _, rest = spec.partition(":")
    factory = _FACTORIES.get(kind)
    if factory is None:
        raise TargetError(f"unknown target kind {kind!r} in {spec!r} (known: {', '.join(target_kinds())})")
    return factory(rest, settings, project_root)
