"""The ``none`` target: no call; the row's recorded ``output`` is what gets scored."""

from __future__ import annotations

from pathlib import Path

from evalsite.targets.base import TargetRequest, TargetResult, register_target


class RecordedOutput:
    kind = "none"

    async def generate(self, request: TargetRequest) -> TargetResult:
        if "output" not in request.row:
            return TargetResult(error="the row has no recorded 'output' to score")
        return TargetResult(output=request.row["output"], finish_reason="recorded")

    async def aclose(self) -> None:
        return None


@register_target("none")
def _make(rest: str, settings: dict, project_root: Path) -> RecordedOutput:
    return RecordedOutput()
