"""The ``none`` target: no call; the row's recorded answer is what gets scored.

The recorded answer is the row's ``output``, else the last assistant message of a chat row
(``input`` as a message list, or ``turns``). Turns rows are not replayed: their recorded
assistant turns are the per-turn outputs.
"""

from __future__ import annotations

from pathlib import Path

from evalsite.calls.targets.base import TargetRequest, TargetResult, check_settings, register_target
from evalsite.calls.targets.turns import assistant_replies
from evalsite.jsonshape import JSONObject


class RecordedOutput:
    kind = "none"
    replays_turns = False

    async def generate(self, request: TargetRequest) -> TargetResult:
        if "output" in request.row:
            return TargetResult(output=request.row["output"], finish_reason="recorded")
        conversation = request.input if isinstance(request.input, list) else []
        if conversation and isinstance(conversation[-1], dict) and conversation[-1].get("role") == "assistant":
            return TargetResult(output=assistant_replies(conversation)[-1], finish_reason="recorded")
        return TargetResult(error="the row has no recorded 'output' (nor a chat ending in an assistant turn) to score")

    async def aclose(self) -> None:
        return None


@register_target("none")
def _make(rest: str, settings: JSONObject, project_root: Path) -> RecordedOutput:
    check_settings("none", settings, set())
    return RecordedOutput()
