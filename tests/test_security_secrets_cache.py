"""The response cache scrubs as a run without it does (issue 32, high 2): a provider echoing the
API key, in its content or in an error body, puts no piece of the key into ``cases.jsonl``, the
cache folder or the built site, with ``--cache auto``, ``record`` and ``replay``; a cached and an
uncached run write the same scrubbed case."""

from __future__ import annotations

import json
import shutil

import pytest
from runner_support import all_runs, openai_arm, questions, write_experiment

from evalsite.execute.cache import CACHE_DIR, ResponseCache
from evalsite.runlog.secrets import MASK

KEY = "sk-live-Zq8vR3tY6uW9pL2mN5bX7cK0"
PIECES = (KEY, KEY[:-1], KEY[1:].upper(), KEY[4:12])
CASE_FIELDS = ("item_id", "output", "error", "score", "passed")


def echoing(server) -> None:
    """The fake provider echoes the key in q0's content and in q1's error body."""
    server.script = {"question 0": [{"reply": f"your key is {KEY}, again {KEY.upper()}"}],
                     "question 1": [{"status": 400, "message": f"bad request for key {KEY[:-1]}"}]}


def files_holding(root, piece: str) -> list[str]:
    """Every file outside ``experiments/`` whose bytes hold ``piece`` (in any letter case)."""
    needle = piece.lower().encode()
    return sorted(str(p.relative_to(root)) for p in root.rglob("*")
                  if p.is_file() and "experiments" not in p.parts and needle in p.read_bytes().lower())


def newest_run(project):
    """The run the last command wrote (run ids of one second sort by their random part)."""
    return max(all_runs(project), key=lambda r: r.header.raw["started_at"])


def cases_by_item(project) -> list[dict]:
    """The newest run's cases as the fields a reader sees, by item."""
    run = newest_run(project)
    return sorted(({k: case.raw.get(k) for k in CASE_FIELDS} for case in run.cases), key=lambda c: c["item_id"])


@pytest.fixture
def echo_manifest(runner_project, server, monkeypatch):
    monkeypatch.setenv("ECHO_KEY", KEY)
    echoing(server)
    return write_experiment(runner_project, questions(2), [openai_arm(server, settings={"api_key_env": "ECHO_KEY"})])


@pytest.mark.parametrize("mode", ["auto", "record"])
def test_an_echoed_key_reaches_neither_the_cache_nor_the_run_nor_the_site(runner_project, server, cli, echo_manifest, mode):
    result = cli("run", echo_manifest, "--cache", mode, "--build")
    assert result.exit_code in (0, 1), result.output
    assert server.calls[0].headers["authorization"] == f"Bearer {KEY}"  # the request itself carries the key
    cases = cases_by_item(runner_project)
    assert cases[0]["output"] == f"your key is {MASK}, again {MASK}"
    assert f"bad request for key {MASK}" in cases[1]["error"]
    assert list((runner_project / CACHE_DIR).rglob("*.json")), "the answer was recorded"
    assert (runner_project / "site" / "index.html").is_file()
    for piece in PIECES:
        assert files_holding(runner_project, piece) == [], piece


def test_a_cached_and_an_uncached_run_write_the_same_scrubbed_case(runner_project, server, cli, echo_manifest):
    cli("run", echo_manifest)
    uncached = cases_by_item(runner_project)
    echoing(server)
    cli("run", echo_manifest, "--cache", "record")
    recorded = cases_by_item(runner_project)
    calls = len(server.calls)
    cli("run", echo_manifest, "--cache", "replay", "--build")
    replayed = cases_by_item(runner_project)
    assert len(server.calls) == calls  # replay called nothing
    assert (runner_project / "site" / "index.html").is_file()
    assert uncached[0] == recorded[0] == replayed[0] and uncached[0]["output"].count(MASK) == 2
    assert uncached[1] == recorded[1]  # an error is not cached: replay has no response for it
    for piece in PIECES:
        assert files_holding(runner_project, piece) == [], piece


def test_replay_scrubs_an_entry_recorded_before_scrubbing(runner_project, server, cli, echo_manifest):
    """A cache written by an older evalsite (or copied in) may hold the key: replay scrubs it too."""
    cli("run", echo_manifest, "--cache", "record")
    cache = ResponseCache(runner_project / CACHE_DIR)
    (entry_path,) = [p for p in cache.entries() if "echo" not in p.read_text() and "key is" in p.read_text()]
    entry = json.loads(entry_path.read_text())
    entry["result"]["output"] = f"raw {KEY} leaked"
    entry_path.write_text(json.dumps(entry))
    shutil.rmtree(runner_project / "runs")
    cli("run", echo_manifest, "--cache", "replay", "--build")
    (case,) = [c for c in cases_by_item(runner_project) if c["item_id"] == "q0"]
    assert case["output"] == f"raw {MASK} leaked"
    assert files_holding(runner_project, KEY) == [str(entry_path.relative_to(runner_project))]  # only the planted file



def test_an_echoed_key_is_scrubbed_behind_the_study_pipeline_and_the_cache(runner_project, server, cli, monkeypatch):
    """A case pre step wraps the target too: neither wrapper may hide the target's secrets."""
    monkeypatch.setenv("ECHO_KEY", KEY)
    echoing(server)
    arm = openai_arm(server, settings={"api_key_env": "ECHO_KEY"})
    manifest = write_experiment(runner_project, questions(2), [arm], hooks={"case": {"pre": [{"name": "noop", "command": ["true"]}]}})
    for mode in ("off", "auto"):
        echoing(server)
        result = cli("run", manifest, "--cache", mode, "--build")
        assert result.exit_code in (0, 1), result.output
        assert cases_by_item(runner_project)[0]["output"] == f"your key is {MASK}, again {MASK}"
    for piece in PIECES:
        assert files_holding(runner_project, piece) == [], piece


def test_a_replayed_conversation_echoing_the_key_replays_from_the_cache(runner_project, server, cli, monkeypatch):
    """The history sent with turn 2 holds turn 1's scrubbed reply, recorded or replayed alike, so
    every turn of a replay is a hit (an unscrubbed history would change turn 2's cache key)."""
    monkeypatch.setenv("ECHO_KEY", KEY)
    turns = [{"role": "user", "content": "question 0"}, {"role": "assistant", "content": "old"},
             {"role": "user", "content": "question 1"}]
    manifest = write_experiment(runner_project, [{"id": "t0", "turns": turns}],
                                [openai_arm(server, settings={"api_key_env": "ECHO_KEY"})])
    server.script = {"question 0": [{"reply": f"your key is {KEY}"}]}
    cli("run", manifest, "--cache", "record")
    assert server.calls[1].body["messages"][1] == {"role": "assistant", "content": f"your key is {MASK}"}
    calls = len(server.calls)
    cli("run", manifest, "--cache", "replay")
    assert len(server.calls) == calls
    (case,) = newest_run(runner_project).cases
    assert case.raw["cache"] == "hit" and case.raw["error"] is None
    assert case.raw["turn_outputs"][0] == f"your key is {MASK}"
    for piece in PIECES:
        assert files_holding(runner_project, piece) == [], piece
