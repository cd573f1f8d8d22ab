"""Transcripts and human review in headless Chromium, from file://: a tool-using multi-turn case
shows every message and tool call; a rating made on the run page, downloaded for real and imported
with ``review import`` is a ``human`` score, and ``judge-agreement`` gives a hand-computed κ."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest
from browser_support import chromium, drawn, load, navigated, needs_browser, problems_in
from review_support import MODULES, make_review_project

from evalsite.analysis.review import human_scores
from evalsite.project import find_project
from evalsite.site import build_site, paths

pytestmark = needs_browser

TOOL_ROW = {
    "id": "oslo",
    "input": [
        {"role": "system", "content": "You are a travel helper with a weather tool."},
        {"role": "user", "content": "What is the weather in Oslo?"},
        {"role": "assistant", "content": None, "latency_ms": 812, "input_tokens": 120, "output_tokens": 18,
         "tool_calls": [{"id": "call_1", "type": "function",
                         "function": {"name": "get_weather", "arguments": "{\"city\": \"Oslo\"}"}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "{\"temp_c\": -3, \"sky\": \"snow\"}"},
        {"role": "assistant", "content": "It is -3 °C and snowing in Oslo."},
        {"role": "user", "content": "And tomorrow? <script>alert(1)</script>"},
        {"role": "assistant", "content": None,
         "tool_calls": [{"id": "call_2", "type": "function",
                         "function": {"name": "get_forecast", "arguments": "{\"city\": \"Oslo\", \"days\": 1}"}}]},
        {"role": "tool", "tool_call_id": "call_2", "content": "{\"temp_c\": 1, \"sky\": \"cloud\"}"},
    ],
    "output": "Tomorrow: 1 °C and cloudy. " + "Long tail. " * 200,
    "expected": "1 °C",
}
TOOLS = '''
name: tools
dataset:
  path: data/tools.jsonl
arms:
  - id: recorded
    target: none
evaluators:
  - type: contains
'''


@pytest.fixture(scope="module")
def reviewed_site(tmp_path_factory) -> Path:
    """The review project and a recorded tool-using conversation, run, with its site built."""
    root = tmp_path_factory.mktemp("review-site")
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(root)
        patch.setattr(sys, "path", [str(root), *sys.path])
        for name in MODULES:
            patch.delitem(sys.modules, name, raising=False)
        make_review_project(root)
        (root / "data" / "tools.jsonl").write_text(json.dumps(TOOL_ROW) + "\n")
        (root / "experiments" / "tools.yaml").write_text(TOOLS)
        from cli_support import Cli

        cli = Cli()
        for manifest in ("review", "tools"):
            assert cli("run", f"experiments/{manifest}.yaml").exit_code in (0, 1)
        build_site(find_project(root))
    return root


def run_of(root: Path, arm: str) -> str:
    return next(p.name for p in sorted((root / "runs").iterdir()) if p.is_dir() and f"-{arm}-" in p.name)


def test_a_tool_using_case_shows_every_message_and_tool_call(browser, reviewed_site):
    project = reviewed_site
    from selenium.webdriver.common.by import By

    site = project / "site"
    load(browser, (site / paths.run(run_of(project, "recorded"))).as_uri())
    (summary,) = drawn(browser, "details.transcript summary")
    assert summary.text == "Transcript: 9 messages, 2 tool calls"
    summary.click()
    messages = browser.find_elements(By.CSS_SELECTOR, "details.transcript li.message")
    roles = [m.find_element(By.CSS_SELECTOR, ".message-head strong").text for m in messages]
    assert roles == ["system", "user", "assistant", "tool", "assistant", "user", "assistant", "tool", "assistant"]
    calls = [c.text for c in browser.find_elements(By.CSS_SELECTOR, "details.transcript .tool-call-head code")]
    assert calls == ["get_weather", "get_forecast"]
    arguments = [c.text for c in browser.find_elements(By.CSS_SELECTOR, "details.transcript pre.arguments")]
    assert arguments == ['{"city": "Oslo"}', '{"city": "Oslo", "days": 1}']
    assert "result of call call_1" in messages[3].text and '"temp_c": -3' in messages[3].text
    assert "812 ms" in messages[2].text and "120 / 18 tokens" in messages[2].text
    assert "<script>alert(1)</script>" in messages[5].text, "shown as text, never run"
    last = messages[-1]
    toggle = last.find_element(By.CSS_SELECTOR, "button.show-all")
    pre = last.find_element(By.CSS_SELECTOR, "pre.text")
    folded = pre.size["height"]
    toggle.click()
    assert pre.size["height"] > folded and pre.get_attribute("textContent") == TOOL_ROW["output"]
    assert problems_in(browser, site) == []


def test_a_rating_downloaded_from_the_page_imports_as_a_human_score(reviewed_site, tmp_path, monkeypatch, cli):
    project = reviewed_site
    from selenium.webdriver.common.by import By

    site, run_id = project / "site", run_of(project, "sloppy")
    downloads = tmp_path / "downloads"
    downloads.mkdir()
    with chromium(downloads) as driver:
        load(driver, (site / paths.run(run_id)).as_uri())
        rows = drawn(driver, "#cases-table tbody tr")
        driver.find_element(By.CSS_SELECTOR, "input.review-reviewer").send_keys("eve\t")
        chosen = {"q00": "fail", "q01": "pass", "q03": "fail", "q04": "unsure", "q05": "fail"}  # q05 disagrees: judge passes "n5"
        for row in rows:
            item = row.find_element(By.TAG_NAME, "code").text
            if item in chosen:
                row.find_element(By.CSS_SELECTOR, f"button.review-{chosen[item]}").click()
                if item == "q03":
                    row.find_element(By.CSS_SELECTOR, "textarea.review-comment").send_keys("short but wrong")
        assert "5 ratings kept in this browser" in driver.find_element(By.CSS_SELECTOR, ".review-count").text
        navigated(driver, driver.refresh)  # ratings survive a reload (localStorage)
        drawn(driver, "#cases-table tbody tr")
        assert "5 ratings kept" in driver.find_element(By.CSS_SELECTOR, ".review-count").text
        driver.find_element(By.CSS_SELECTOR, "button.review-download").click()
        path = downloads / "ratings.jsonl"
        for _ in range(100):
            if path.exists():
                break
            time.sleep(0.1)
        assert problems_in(driver, site) == []
        driver.find_element(By.CSS_SELECTOR, "button.review-forget").click()
        assert "0 ratings kept" in driver.find_element(By.CSS_SELECTOR, ".review-count").text
        assert not driver.find_elements(By.CSS_SELECTOR, "div.review button[aria-pressed=true]")
        navigated(driver, driver.refresh)
        drawn(driver, "#cases-table tbody tr")
        assert "0 ratings kept" in driver.find_element(By.CSS_SELECTOR, ".review-count").text
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert [(line["item_id"], line["rating"], line["reviewer"]) for line in lines] == [
        (item, rating, "eve") for item, rating in sorted(chosen.items())]
    assert next(line for line in lines if line["item_id"] == "q03")["comment"] == "short but wrong"

    monkeypatch.chdir(project)
    imported = cli.json("review", "import", str(path))
    assert imported["recorded"] == 5 and imported["reviewers"] == ["eve"]
    decisions = [json.loads(line) for line in (project / "runs" / "decisions.jsonl").read_text().splitlines()]
    assert {(d["review"]["item_id"], d["review"]["rating"]) for d in decisions} == set(chosen.items())
    human = {key[1]: [(d.by, d.review.passed) for d in rated if d.review is not None]
             for key, rated in human_scores(project / "runs").items() if key[0] == run_id}
    assert human == {item: [("eve", {"pass": True, "fail": False}.get(rating))] for item, rating in chosen.items()}, (
        "each rating reads back as the human evaluator's verdict of its case, by its reviewer")

    (report,) = cli.json("judge-agreement", "--evaluator", "brief")
    cases = {json.loads(line)["item_id"]: json.loads(line) for line in (project / "runs" / run_id / "cases.jsonl").read_text().splitlines()}
    judge = {item: next(s for s in cases[item]["scores"] if s["evaluator"] == "brief")["passed"] for item in chosen}
    sure = [item for item, rating in chosen.items() if rating != "unsure"]
    pairs = [(judge[item], chosen[item] == "pass") for item in sure]
    # by hand: q00 long wrong → judge fail; q01 "n1" → pass; q03 "x3" → judge pass; q05 "n5" → judge pass
    assert pairs == [(False, False), (True, True), (True, False), (True, False)]
    p_o = 2 / 4
    p_e = (3 / 4) * (1 / 4) + (1 / 4) * (3 / 4)  # judge passes 3 of 4, humans 1 of 4
    assert report["n"] == 4 and report["unsure"] == 1
    assert report["raw_agreement"] == pytest.approx(p_o)
    assert report["kappa"] == pytest.approx((p_o - p_e) / (1 - p_e))
    assert report["confusion"] == {"judge_pass_human_pass": 1, "judge_pass_human_fail": 2,
                                   "judge_fail_human_pass": 0, "judge_fail_human_fail": 1}
    assert sorted(d["item_id"] for d in report["disagreements"]) == ["q03", "q05"]


def test_the_item_page_shows_answers_side_by_side_with_a_diff_toggle_and_the_judges_reason(browser, reviewed_site):
    project = reviewed_site
    from selenium.webdriver.common.by import By

    run_id = run_of(project, "sloppy")
    dataset_id = json.loads((project / "runs" / run_id / "run.json").read_text())["dataset"]["dataset_id"]
    page = project / "site" / paths.item_page(dataset_id, paths.item_bucket("q03"))
    load(browser, page.as_uri() + "#" + paths.item_anchor("q03"))
    section = drawn(browser, f"section#{paths.item_anchor('q03')}")[0]
    view = section.find_element(By.CSS_SELECTOR, "details.side-by-side-view")
    view.find_element(By.TAG_NAME, "summary").click()
    columns = view.find_elements(By.CSS_SELECTOR, ".side-by-side-column")
    assert sorted(c.find_element(By.TAG_NAME, "h3").text for c in columns) == ["right", "sloppy"]
    assert sorted(c.find_element(By.TAG_NAME, "pre").text for c in columns) == ["n3", "x3"]
    assert not view.find_elements(By.CSS_SELECTOR, "ins, del")
    view.find_element(By.CSS_SELECTOR, "label.diff-toggle input").click()
    marked = view.find_elements(By.CSS_SELECTOR, ".side-by-side-column ins, .side-by-side-column del")
    assert sorted(m.text for m in marked) == ["n3", "x3"], "the second column's word against the first's"
    reasons = section.find_elements(By.CSS_SELECTOR, "details.explanation")
    assert reasons, "every evaluator's explanation is on the item page"
    judged = [r for r in reasons if "short answer" in r.get_attribute("textContent")]
    assert len(judged) == 2, "the judge's reason on both answers (9/10: short answer)"
    judged[0].find_element(By.TAG_NAME, "summary").click()
    assert "short answer" in judged[0].find_element(By.TAG_NAME, "pre").text


def test_the_judges_page_shows_what_judge_agreement_computes(reviewed_site, monkeypatch, cli):
    project = reviewed_site
    from sitekit import parse, table_rows

    monkeypatch.chdir(project)
    run_id = run_of(project, "right")
    ratings = [{"run_id": run_id, "item_id": f"q{n:02d}", "repeat": 0, "rating": "pass" if n < 10 else "fail"}
               for n in range(12)]
    Path("right.jsonl").write_text("".join(json.dumps(r) + "\n" for r in ratings))
    assert cli("review", "import", "right.jsonl", "--reviewer", "gus").exit_code == 0
    build_site(find_project(project))
    (report,) = cli.json("judge-agreement")
    page = parse(project / "site" / paths.JUDGES)
    (row,) = table_rows(page.find("div", id="judges").find("table"))
    assert row[0] == "brief" and row[1] == str(report["n"])
    assert f"{report['kappa']:.3f}" in row[2] and f"{report['kappa_interval']['low']:.3f}" in row[2]
    shown = {r[2] for r in table_rows(page.find("div", id="disagreements-brief").find("table"))}
    assert shown == {d["item_id"] for d in report["disagreements"]}
    run_page = parse(project / "site" / paths.run(run_id))
    assert run_page.find("p", class_="judge-link").find("a").attrs["href"].endswith("judges.html")


def test_a_cut_text_says_so_and_the_run_page_shows_it_whole_on_request(tmp_path, monkeypatch, browser, cli):
    from selenium.webdriver.common.by import By

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [str(tmp_path), *sys.path])
    monkeypatch.delitem(sys.modules, "cut_arms", raising=False)
    (tmp_path / "data").mkdir()
    (tmp_path / "experiments").mkdir()
    (tmp_path / "evalsite.toml").write_text("[site]\nmax_field_chars = 30\n")
    (tmp_path / "data" / "long.jsonl").write_text(json.dumps({"id": "a", "input": "go", "expected": "x" * 50}) + "\n")
    (tmp_path / "cut_arms.py").write_text("def one(input):\n    return 'a' * 100\n\ndef two(input):\n    return 'b' * 80\n")
    (tmp_path / "experiments" / "long.yaml").write_text(
        "name: long\ndataset: {path: data/long.jsonl}\narms:\n  - {id: one, target: 'python:cut_arms:one'}\n"
        "  - {id: two, target: 'python:cut_arms:two'}\nevaluators:\n  - {type: exact}\n")
    assert cli("run", "experiments/long.yaml").exit_code == 1  # both answers are wrong
    build_site(find_project(tmp_path))
    load(browser, (tmp_path / "site" / "experiments" / "long.html").as_uri())
    drawn(browser, "#matrix-table tbody tr")[0].find_element(By.PARTIAL_LINK_TEXT, " distinct").click()
    notes = sorted(n.text for n in drawn(browser, "tr.diff-row p.cut"))
    # the expected value (50 characters), then the two outputs (80 and 100): none cut silently
    assert notes == [f"… {n} more characters not shown (max_field_chars)." for n in (20, 50, 70)], notes

    load(browser, (tmp_path / "site" / paths.run(run_of(tmp_path, "one"))).as_uri())
    row = drawn(browser, "#cases-table tbody tr")[0]
    output = row.find_elements(By.CSS_SELECTOR, "td pre.text")[2]  # input, expected, output
    assert output.text == "a" * 30
    row.find_elements(By.CSS_SELECTOR, "button.show-whole")[1].click()  # the expected value's, then the output's
    from selenium.webdriver.support.ui import WebDriverWait

    WebDriverWait(browser, 10).until(lambda d: output.text == "a" * 100)
    assert problems_in(browser, tmp_path / "site") == []
