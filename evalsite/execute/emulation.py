"""``emulation.infra.llm: mock``: a study-wide mock in place of every model call.

With the mock on, no arm's target is built or called (so no key is needed and no request
leaves the machine): each call is answered by :class:`MockTarget` with a fixed text, no
tokens and no cost, and the attempt counts as none (``attempts: 0``). Every case of such a run
records ``emulated: true`` and its header's fingerprint ``emulation.llm: mock``, so ``show``,
the site and comparisons say the numbers are the pipeline's, not a model's. The response cache
is off under the mock (a mock answer is never stored as a model's), and an ``llm_judge``
evaluator is refused (its judge would call a model).
"""

from __future__ import annotations

from evalsite.calls.targets import TargetRequest, TargetResult
from evalsite.errors import ManifestError
from evalsite.experiment.manifest import Manifest

MOCK = "mock"
#: What the mock answers when ``emulation.infra.response`` does not say.
DEFAULT_RESPONSE = "mock response"


def llm_mode(manifest: Manifest) -> str:
    """``mock`` or ``live`` (the default): how the manifest's model calls are made."""
    return ((manifest.emulation or {}).get("infra") or {}).get("llm", "live")


class MockTarget:
    """Answers every call with ``response``, calling nothing."""

    kind = MOCK
    replays_turns = True

    def __init__(self, response: str):
        self.response = response

    async def generate(self, request: TargetRequest) -> TargetResult:
        return TargetResult(output=self.response, input_tokens=0, output_tokens=0, cost_usd=0.0,
                            finish_reason=MOCK, called=False)

    async def aclose(self) -> None:
        return None


def mock_target(manifest: Manifest) -> MockTarget:
    return MockTarget(((manifest.emulation or {}).get("infra") or {}).get("response", DEFAULT_RESPONSE))


def refuse_model_evaluators(manifest: Manifest) -> None:
    """Under the mock, an evaluator that calls a model would make the provider call the mock forbids."""
    if llm_mode(manifest) != MOCK:
        return
    for index, spec in enumerate(manifest.evaluators):
        if spec.get("type") == "llm_judge":
            raise ManifestError(f"{manifest.path}: evaluators[{index}]: an llm_judge calls its judge model, which "
                                "emulation.infra.llm: mock forbids; drop the judge or run live")
