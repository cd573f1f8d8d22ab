"""Every example of docs/reference/targets.md runs as written (HTTP ones against the fake server)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import yaml

from evalsite.runlog.store import read_run, run_directories

DOC = Path(__file__).resolve().parent.parent / "docs" / "reference" / "targets.md"
TITLED = re.compile(r'```\w+ title="([^"]+)"\n(.*?)```', re.DOTALL)
RUN = re.compile(r"^(?:\w+=\S+ )?evalsite (run .+)$", re.MULTILINE)


def test_every_example_runs_and_scores_what_it_claims(runner_project, server, cli, monkeypatch):
    for name, text in TITLED.findall(DOC.read_text(encoding="utf-8")):
        path = runner_project / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    point_http_arms_at(runner_project, server)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-doc-example")
    for question, answer in [("France", "Paris"), ("Japan", "Tokyo")]:  # asked by two examples
        server.script[f"What is the capital of {question}? One word."] = [{"reply": answer}] * 2
    weather = {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'}}
    # asked by the openai example, then the anthropic one (the server sends the call as a tool_use block)
    server.script["What is the weather in Oslo?"] = [{"tool_calls": [weather]}, {"reply": "-3 °C and snowing."}] * 2
    commands = RUN.findall(DOC.read_text(encoding="utf-8"))
    assert len(commands) == 8
    for command in commands:
        result = cli(*shlex.split(command))
        assert result.exit_code == 0, (command, result.output)
    runs = [read_run(directory) for directory in run_directories(runner_project / "runs")]
    assert len(runs) == 8
    assert {run.header.experiment: run.footer.totals.pass_rate for run in runs} == dict.fromkeys(
        ["answered", "capitals", "capitals-claude", "reverse", "shout", "thread", "weather", "weather-claude"], 1.0
    )
    (gpt,) = [run.cases[0] for run in runs if run.header.experiment == "weather"]
    (claude,) = [run.cases[0] for run in runs if run.header.experiment == "weather-claude"]
    for tools in (gpt, claude):
        assert [m["role"] for m in tools["transcript"]] == ["user", "assistant", "tool", "assistant"]
        assert tools["transcript"][1]["tool_calls"] == [weather]
        assert tools["transcript"][2]["content"] == '{"city": "Oslo", "temp_c": -3, "sky": "snow"}'
    (answered,) = [c.body["messages"][-1] for c in server.calls if c.path == "/v1/messages" and len(c.body["messages"]) > 1]
    assert answered == {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "call_1",
                                                     "content": '{"city": "Oslo", "temp_c": -3, "sky": "snow"}'}]}


def point_http_arms_at(project: Path, server) -> None:
    """The examples name a real server; these tests never leave 127.0.0.1."""
    for manifest in (project / "experiments").glob("*.yaml"):
        document = yaml.safe_load(manifest.read_text())
        for arm in document["arms"]:
            if arm["target"].startswith(("openai:", "anthropic:")):
                base = server.url + ("/v1" if arm["target"].startswith("openai:") else "")
                arm.setdefault("settings", {})["base_url"] = base
        manifest.write_text(yaml.safe_dump(document))
