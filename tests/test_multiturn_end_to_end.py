"""A ``turns`` row replayed by the runner and scored per turn (single_turn) and per thread."""

from __future__ import annotations

import json

import pytest

from evalsite.runlog.store import read_run, run_directories


def test_turns_are_replayed_and_scored_per_turn_and_per_thread(tmp_path, cli, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "data").mkdir()
    (tmp_path / "experiments").mkdir()
    (tmp_path / "mt_bot.py").write_text(
        "def reply(input):\n    return f\"{len(input)}:{input[-1]['content'].upper()}\"\n"
    )
    (tmp_path / "data/chat.jsonl").write_text(json.dumps({"id": "c1", "turns": ["hi", "bye"], "expected": ["1:HI", "3:BYE!"]}) + "\n")
    (tmp_path / "experiments/chat.yaml").write_text(
        "name: chat\ndataset: {path: data/chat.jsonl}\narms:\n  - {id: bot, target: 'python:mt_bot:reply'}\n"
        "evaluators:\n  - {type: exact, name: per_turn, scope: single_turn}\n"
        "  - {type: contains, name: thread, value: BYE}\n"
    )
    result = cli("run", "experiments/chat.yaml")
    assert result.exit_code == 1, result.output  # the second turn fails its exact match
    (case,) = read_run(run_directories(tmp_path / "runs")[0]).cases
    # the history grows with the bot's own replies: 1 message, then 3 (user, assistant, user)
    assert case["turn_outputs"] == ["1:HI", "3:BYE"]
    assert [m["role"] for m in case["transcript"]] == ["user", "assistant", "user", "assistant"]
    per_turn = [(s["turn"], s["score"]) for s in case["scores"] if s["evaluator"] == "per_turn"]
    assert per_turn == [(1, 1.0), (2, 0.0)]
    (thread,) = [s for s in case["scores"] if s["evaluator"] == "thread"]
    assert thread["passed"] is True and thread.get("turn") is None
    assert case["score"] == (0.5 + 1.0) / 2 and case["passed"] is False


def test_a_replay_records_each_turns_figures_and_the_site_shows_them_on_its_reply(tmp_path, cli, monkeypatch):
    from evalsite.site.transcripts import conversation

    monkeypatch.chdir(tmp_path)
    (tmp_path / "data").mkdir()
    (tmp_path / "experiments").mkdir()
    (tmp_path / "mt_counted.py").write_text(
        "def reply(input):\n    return {'output': 'ok', 'input_tokens': 10 * len(input), 'output_tokens': len(input)}\n")
    (tmp_path / "data/chat.jsonl").write_text(json.dumps({"id": "c1", "turns": ["hi", "more", "bye"]}) + "\n")
    (tmp_path / "experiments/chat.yaml").write_text(
        "name: chat\ndataset: {path: data/chat.jsonl}\narms:\n  - {id: bot, target: 'python:mt_counted:reply'}\n"
        "evaluators:\n  - {type: contains, value: ok}\n")
    assert cli("run", "experiments/chat.yaml").exit_code == 0
    (case,) = read_run(run_directories(tmp_path / "runs")[0]).cases
    figures = case["turn_figures"]
    assert [(f["input_tokens"], f["output_tokens"]) for f in figures] == [(10, 1), (30, 3), (50, 5)]  # history 1, 3, 5
    assert case.input_tokens == 90 and case.latency_ms == pytest.approx(sum(f["latency_ms"] for f in figures), abs=0.01)
    shown = [m for m in conversation(case, 1000) if m["role"] == "assistant"]
    assert [m["figures"]["input_tokens"] for m in shown] == [10, 30, 50]
