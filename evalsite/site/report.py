"""What a build did (:class:`SiteReport`), in a module of its own: a nothing-new build
(:mod:`evalsite.site.unchanged`) reports it without loading the renderer."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class SiteReport:
    """What a build did; ``--json`` prints it."""

    out_dir: Path
    pages: int
    rendered: int
    kept: int
    files: int
    bytes: int
    seconds: float
    input_hash: str
    skipped_runs: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["out_dir"] = str(self.out_dir)
        return data
