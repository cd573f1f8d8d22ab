"""``emulation.infra.llm: mock``: no provider call at all, every case marked emulated, and a mock
run never compared with a live one."""

from __future__ import annotations

import json
from html.parser import HTMLParser

from runner_support import all_runs, openai_arm, questions, write_experiment

from evalsite.analysis.compare import comparability
from evalsite.site import paths

MOCK = {"infra": {"llm": "mock"}}


def _arm(server):
    return openai_arm(server, settings={"api_key_env": "EVALSITE_TEST_KEY_NEVER_SET"})


def test_a_mock_run_makes_no_request_and_marks_every_case_emulated(runner_project, server, cli):
    manifest = write_experiment(runner_project, questions(3), [_arm(server)], repeat=2, emulation=MOCK)
    result = cli("run", manifest, "--allow-failures")
    assert result.exit_code == 0, result.output
    assert server.calls == []  # the server was up and reachable: nothing reached it
    (run,) = all_runs(runner_project)
    assert run.header.emulated and run.header.fingerprint["emulation"] == {"llm": "mock"}
    assert len(run.cases) == 6
    for case in run.cases:
        assert case.emulated is True and case["emulated"] is True
        assert case["output"] == "mock response" and case["attempts"] == 0 and case["cost_usd"] == 0.0
        assert case["finish_reason"] == "mock" and "cache" not in case
    shown = cli("show", run.run_id)
    assert "emulated: every answer came from emulation.infra.llm: mock" in shown.output
    assert json.loads(cli("show", run.run_id, "--json").stdout)["emulated"] is True
    rows = cli.json("query", "SELECT DISTINCT emulated FROM cases")
    assert rows == [{"emulated": True}]


def test_a_mock_run_is_not_comparable_with_a_live_one(runner_project, server, cli):
    live = write_experiment(runner_project, questions(2), [openai_arm(server)])
    assert cli("run", live).exit_code == 0
    calls = len(server.calls)
    mocked = write_experiment(runner_project, questions(2), [openai_arm(server)], emulation={
        "infra": {"llm": "mock", "response": "echo: question 0"}})
    assert cli("run", mocked, "--allow-failures").exit_code == 0
    assert len(server.calls) == calls
    first, second = sorted(all_runs(runner_project), key=lambda run: run.header.started_at)  # ids of one second sort by their random tail
    assert [c["output"] for c in second.cases] == ["echo: question 0"] * 2  # emulation.infra.response
    verdict = comparability(first.header, second.header)
    assert not verdict.comparable and verdict.reason == "a model's answers vs emulated (mock) ones"
    refused = cli("compare", second.run_id, "--baseline", first.run_id)
    assert refused.exit_code == 1 and "emulated (mock)" in refused.output


def test_a_judge_is_refused_under_the_mock(runner_project, server, cli):
    manifest = write_experiment(runner_project, questions(1), [openai_arm(server)], emulation=MOCK, evaluators=[
        {"type": "llm_judge", "judge": {"target": "openai:judge", "settings": {"base_url": server.url + "/v1"}},
         "rubric": "is it right?"}])
    result = cli("run", manifest)
    assert result.exit_code == 1
    (line,) = [line for line in result.output.splitlines() if line.startswith("Error:")]
    assert "evaluators[0]: an llm_judge calls its judge model, which emulation.infra.llm: mock forbids" in line
    assert server.calls == [] and all_runs(runner_project) == []


class _Badges(HTMLParser):
    def __init__(self):
        super().__init__()
        self.badges: list[str] = []
        self._open = False

    def handle_starttag(self, tag, attrs):
        self._open = tag == "span" and "badge-emulated" in (dict(attrs).get("class") or "")

    def handle_data(self, data):
        if self._open:
            self.badges.append(data.strip())
            self._open = False


def test_the_run_page_says_emulated(runner_project, server, cli):
    mocked = write_experiment(runner_project, questions(1), [openai_arm(server)], emulation=MOCK)
    assert cli("run", mocked, "--allow-failures", "--build").exit_code == 0
    (run,) = all_runs(runner_project)
    page = _Badges()
    page.feed((runner_project / "site" / paths.run(run.run_id)).read_text())
    assert page.badges == ["emulated"]
