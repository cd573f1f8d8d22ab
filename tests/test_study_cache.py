"""The response cache: record, replay, auto, marks, repeats, the fingerprint and `evalsite cache`."""

from __future__ import annotations

import json

from runner_support import all_runs, openai_arm, questions, write_experiment

from evalsite.analysis.compare import comparability


def _runs_by_mode(project):
    return {run.header.raw["fingerprint"].get("emulation", {}).get("cache"): run for run in all_runs(project)}


def test_record_then_replay_calls_nothing_and_each_repeat_replays_its_own_response(runner_project, server, cli):
    for i in range(2):
        server.script[f"question {i}"] = [{"reply": f"answer {i}.{k}"} for k in range(3)]
    manifest = write_experiment(runner_project, questions(2), [openai_arm(server, price={"input": 1, "output": 1})],
                                repeat=3, concurrency=1)
    assert cli("run", manifest, "--cache", "record", "--allow-failures").exit_code == 0
    assert len(server.calls) == 6
    recorded = _runs_by_mode(runner_project)["record"]
    assert {c["cache"] for c in recorded.cases} == {"recorded"}

    assert cli("run", manifest, "--cache", "replay", "--allow-failures").exit_code == 0
    assert len(server.calls) == 6  # the replay made no call at all
    replayed = _runs_by_mode(runner_project)["replay"]
    assert [c["cache"] for c in replayed.cases] == ["hit"] * 6
    assert [c["attempts"] for c in replayed.cases] == [0] * 6 and [c["attempts"] for c in recorded.cases] == [1] * 6
    outputs = {(c["item_id"], c["repeat"]): c["output"] for c in replayed.cases}
    assert outputs == {(f"q{i}", k): f"answer {i}.{k}" for i in range(2) for k in range(3)}
    assert outputs == {(c["item_id"], c["repeat"]): c["output"] for c in recorded.cases}
    # the same responses cost what they cost when recorded, so the runs stay comparable
    assert [c["cost_usd"] for c in replayed.cases] == [c["cost_usd"] for c in recorded.cases]
    verdict = comparability(recorded.header, replayed.header)
    assert verdict.comparable
    assert [d.path for d in verdict.differences if d.path.startswith("emulation")] == ["emulation.cache"]


def test_replay_fails_a_case_whose_response_is_missing(runner_project, server, cli):
    manifest = write_experiment(runner_project, questions(2), [openai_arm(server)])
    assert cli("run", manifest, "--cache", "record").exit_code == 0
    rows = questions(3)
    (runner_project / "data/exp.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert cli("run", manifest, "--cache", "replay").exit_code == 1
    assert len(server.calls) == 2
    cases = {c["item_id"]: c for c in _runs_by_mode(runner_project)["replay"].cases}
    assert cases["q0"]["cache"] == cases["q1"]["cache"] == "hit" and cases["q0"]["error"] is None
    assert cases["q2"]["cache"] == "missing"
    assert cases["q2"]["error"].startswith("cache replay: no recorded response for item 'q2' repeat 0")


def test_auto_replays_what_exists_and_records_the_rest(runner_project, server, cli):
    manifest = write_experiment(runner_project, questions(1), [openai_arm(server)], emulation={"cache": "auto"})
    assert cli("run", manifest).exit_code == 0
    assert cli("run", manifest, "--repeat", "2").exit_code == 0
    assert len(server.calls) == 2  # repeat 0 once, repeat 1 only in the second run
    second = max(all_runs(runner_project), key=lambda run: run.header.raw["started_at"])
    assert sorted((c["repeat"], c["cache"]) for c in second.cases) == [(0, "hit"), (1, "recorded")]


def test_a_different_config_does_not_share_responses(runner_project, server, cli):
    manifest = write_experiment(runner_project, questions(1), [openai_arm(server)], emulation={"cache": "auto"})
    assert cli("run", manifest).exit_code == 0
    assert cli("run", manifest, "--set", "arms.gpt.params.temperature=0.5").exit_code == 0
    assert len(server.calls) == 2


def test_errors_are_not_cached(runner_project, server, cli):
    server.script["question 0"] = [{"status": 400, "message": "bad"}]
    manifest = write_experiment(runner_project, questions(1), [openai_arm(server)], emulation={"cache": "auto"})
    assert cli("run", manifest).exit_code == 1
    assert cli("run", manifest).exit_code == 0
    assert len(server.calls) == 2


def test_cache_stats_and_prune(runner_project, server, cli):
    manifest = write_experiment(runner_project, questions(3), [openai_arm(server)])
    assert cli("run", manifest, "--cache", "record").exit_code == 0
    stats = json.loads(cli("cache", "stats", "--json").output)
    assert stats["entries"] == 3 and stats["by_target"] == {"openai:fake-model": 3} and stats["bytes"] > 0
    assert "removed 0 cached responses" in cli("cache", "prune", "--older-than", "1").output
    assert cli("cache", "prune").exit_code == 2
    assert "removed 3 cached responses" in cli("cache", "prune", "--all").output
    assert json.loads(cli("cache", "stats", "--json").output)["entries"] == 0


def test_an_unknown_cache_mode_is_one_line(runner_project, server, cli):
    write_experiment(runner_project, questions(1), [openai_arm(server)], emulation={"cache": "replya"})
    result = cli("validate")
    assert result.exit_code == 1
    assert "emulation.cache: must be one of off, record, replay, auto, got 'replya'; did you mean 'replay'?" in result.output


def test_a_longer_timeout_still_replays_the_same_responses(runner_project, server, cli):
    manifest = write_experiment(runner_project, questions(1), [openai_arm(server)], emulation={"cache": "auto"})
    assert cli("run", manifest).exit_code == 0
    assert cli("run", manifest, "--set", "arms.gpt.settings.timeout=99").exit_code == 0
    assert len(server.calls) == 1


def test_the_run_page_marks_cached_cases(runner_project, server, cli):
    manifest = write_experiment(runner_project, questions(2), [openai_arm(server)])
    assert cli("run", manifest, "--cache", "record").exit_code == 0
    assert cli("run", manifest, "--cache", "replay", "--build").exit_code == 0
    from sitedata import run_cases  # the run page's listing is drawn from these (static/cases.js marks them "cached")

    hits = {run.run_id: sum(c["cache"] == "hit" for c in run_cases(runner_project / "site", run.run_id)) for run in all_runs(runner_project)}
    replayed = _runs_by_mode(runner_project)["replay"].run_id
    assert hits == {run_id: 2 if run_id == replayed else 0 for run_id in hits}


def test_concurrent_writers_of_one_key_never_collide(tmp_path):
    import threading

    from evalsite.execute.cache import ResponseCache

    cache, errors = ResponseCache(tmp_path), []

    def write(n: int) -> None:
        try:
            for _ in range(100):
                cache.put("ab" * 32, {"writer": n})
        except OSError as exc:
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(n,)) for n in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == [] and len(cache.entries()) == 1 and cache.get("ab" * 32)["writer"] in range(6)
    assert not list(tmp_path.glob("*/*.tmp"))


def test_an_entry_that_is_not_a_json_object_reads_as_unreadable(tmp_path):
    from evalsite.execute.cache import ResponseCache

    cache = ResponseCache(tmp_path)
    cache.put("cd" * 32, {"target": "mock", "recorded_at": "2000-01-01T00:00:00+00:00"})
    cache.path("ab" * 32).parent.mkdir(parents=True)
    cache.path("ab" * 32).write_text("[1, 2]", encoding="utf-8")  # valid JSON, not an entry: stats used to crash
    assert cache.get("ab" * 32) is None and cache.get("cd" * 32)["target"] == "mock"
    stats = cache.stats()
    assert stats["entries"] == 2 and stats["by_target"] == {"?": 1, "mock": 1}
    assert cache.prune(1) == 2  # an unreadable entry counts as the oldest


def test_identical_arms_do_not_share_responses(runner_project, server, cli):
    arms = [openai_arm(server, "a1"), openai_arm(server, "a2")]
    manifest = write_experiment(runner_project, questions(1), arms, emulation={"cache": "auto"})
    assert cli("run", manifest).exit_code == 0
    assert len(server.calls) == 2
    assert {c["cache"] for run in all_runs(runner_project) for c in run.cases} == {"recorded"}
