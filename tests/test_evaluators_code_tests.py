"""``code_tests``: HumanEval problems scored by running each answer in the sandbox, in real runs.

The acceptance run: fifteen vendored HumanEval problems, three ``python:`` arms — the canonical
solutions, the same with every third problem broken, and a hostile arm (an endless loop, writes
outside its folder, a fork bomb, a 10 GB allocation, a segfault, a syntax error, a look at the
environment) — each case labelled for how it ended, nothing left behind.
"""

from __future__ import annotations

import asyncio
import ctypes
import json
import os
import shutil
import socket
import sys
import tempfile
from pathlib import Path

import pytest
import yaml
from example_support import REPO

from evalsite.runlog.store import read_run, run_directories
from evalsite.scoring import sandbox_child

SAMPLE = REPO / "examples" / "humaneval" / "data" / "humaneval_sample.jsonl"
SECRET = "EVALSITE_CODE_TESTS_SECRET"
ARMS = '''
import json
from pathlib import Path

OUTSIDE = Path(__file__).parent / "outside"
HOSTILE = {
    "loop": "    while True:\\n        pass\\n",
    "shell_write": "    import os\\n    os.system('touch {outside}/shell; touch inside')\\n",
    "python_write": "    open('{outside}/python', 'w').write('x')\\n",
    "fork_bomb": "    import os\\n    while True:\\n        try:\\n            os.fork()\\n        except OSError:\\n            pass\\n",
    "allocation": "    return bytearray(10 * 1024 ** 3)\\n",
    "segfault": "    import ctypes\\n    ctypes.string_at(0)\\n",
    "syntax": "    return (\\n",
    "environment": "    import os\\n    print(sorted(os.environ))\\n",
    "flood": "    while True:\\n        print('x' * 65536)\\n",
}


def number(row):
    return int(row["id"].rsplit("_", 1)[1])


def correct(row):
    return row["output"]


def broken(row):
    return "    return None\\n" if number(row) % 3 == 0 else row["output"]


def hostile(row):
    kinds = list(HOSTILE)
    return HOSTILE[kinds[number(row) % len(kinds)]].format(outside=OUTSIDE)
'''
EXPECTED_HOSTILE = {
    "loop": ("timeout", "still running after 2 s (wall-clock limit)"),
    "shell_write": ("failed", "AssertionError"),  # the write is refused; the function returns None
    "python_write": ("error", "PermissionError"),  # with Landlock; without, the write succeeds (see below)
    "fork_bomb": ("timeout", "still running after 2 s (wall-clock limit)"),
    "allocation": ("memory", "MemoryError"),
    "segfault": ("killed", "killed by SIGSEGV"),
    "syntax": ("syntax_error", "SyntaxError"),
    "environment": ("failed", "AssertionError"),
    "flood": ("error", "OSError: [Errno 27] File too large"),  # stdout reached the 16 MB file-size limit
}


@pytest.fixture
def humaneval_project(runner_project, monkeypatch):
    """The vendored sample, the three arms, a folder for the sandboxes' temporary folders."""
    shutil.copy(SAMPLE, runner_project / "data" / "humaneval.jsonl")
    (runner_project / "code_arms.py").write_text(ARMS)
    (runner_project / "outside").mkdir()
    sandboxes = runner_project / "sandboxes"
    sandboxes.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(sandboxes))
    monkeypatch.setenv(SECRET, "do-not-leak")
    monkeypatch.syspath_prepend(str(runner_project))
    monkeypatch.delitem(sys.modules, "code_arms", raising=False)
    return runner_project


def write_manifest(project: Path, **evaluator) -> str:
    document = {
        "name": "humaneval",
        "dataset": {"path": "data/humaneval.jsonl"},
        "arms": [{"id": arm, "target": f"python:code_arms:{arm}"} for arm in ("correct", "broken", "hostile")],
        "evaluators": [{"type": "code_tests", "timeout_s": 2, "memory_mb": 256, "processes": 16, "workers": 4,
                        **evaluator}],
    }
    (project / "experiments" / "humaneval.yaml").write_text(yaml.safe_dump(document))
    return "experiments/humaneval.yaml"


def runs_by_arm(project: Path) -> dict:
    runs = [read_run(directory) for directory in run_directories(project / "runs")]
    return {run.header.arm_id: run for run in runs}


def sandbox_processes() -> list[int]:
    """Processes still running the sandbox's first file (a fork bomb's survivors would)."""
    found = []
    for name in os.listdir("/proc"):
        try:
            command = Path(f"/proc/{name}/cmdline").read_bytes()
        except OSError:
            continue
        if name.isdigit() and b"sandbox_child.py" in command:
            found.append(int(name))
    return found


def test_a_humaneval_run_scores_correct_broken_and_hostile_arms(humaneval_project, cli):
    result = cli("run", write_manifest(humaneval_project))
    assert result.exit_code in (0, 1), result.output
    runs = runs_by_arm(humaneval_project)
    assert sorted(runs) == ["broken", "correct", "hostile"]
    assert all(run.footer.status.value == "completed" for run in runs.values())

    correct = runs["correct"]
    assert [(c["score"], c["scores"][0]["label"]) for c in correct.cases] == [(1.0, "passed")] * 15
    assert correct.footer.totals.mean_score == 1.0

    broken = {c["item_id"]: c for c in runs["broken"].cases}
    failing = sorted(item for item, case in broken.items() if not case["passed"])
    assert failing == sorted(f"HumanEval_{n}" for n in range(15) if n % 3 == 0)
    assert runs["broken"].footer.totals.mean_score == pytest.approx(10 / 15)
    assert {broken[item]["scores"][0]["label"] for item in failing} <= {"failed", "error"}

    kinds, confined = list(EXPECTED_HOSTILE), landlock_abi() >= 1
    expected = {**EXPECTED_HOSTILE, **({} if confined else {"python_write": ("failed", "AssertionError")})}
    for case in runs["hostile"].cases:
        (score,) = case["scores"]
        kind = kinds[int(case["item_id"].rsplit("_", 1)[1]) % len(kinds)]
        label, reason = expected[kind]
        assert (kind, score["label"], score["score"], score["passed"]) == (kind, label, 0.0, False)
        assert reason in score["detail"], (kind, score["detail"])
        assert SECRET not in score["detail"] and "do-not-leak" not in score["detail"]
        assert len(score["detail"]) < 3 * 8192, "stdout and stderr are kept to 8 KB each"

    assert sandbox_processes() == [], "a sandboxed process outlived its case"
    assert list((humaneval_project / "sandboxes").iterdir()) == [], "a sandbox folder was left behind"
    assert not (humaneval_project / "inside").exists(), "a relative write landed in the project"
    if confined:  # without Landlock an absolute path the user may write is not refused
        assert list((humaneval_project / "outside").iterdir()) == []


def test_the_environment_holds_only_path_home_tmpdir_and_the_locale(humaneval_project, cli):
    rows = [json.loads(line) for line in SAMPLE.read_text().splitlines()]
    rows[7]["output"] = "    import os\n    print(sorted(os.environ))\n    print(os.getcwd() == os.environ['HOME'])\n"
    (humaneval_project / "data" / "humaneval.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows[7:8]))
    manifest = write_manifest(humaneval_project)
    document = yaml.safe_load((humaneval_project / manifest).read_text())
    document["arms"] = [{"id": "recorded", "target": "none"}]
    (humaneval_project / manifest).write_text(yaml.safe_dump(document))
    cli("run", manifest)
    (case,) = runs_by_arm(humaneval_project)["recorded"].cases
    stdout = case["scores"][0]["detail"].split("--- stdout ---\n")[1].split("\n--- stderr")[0]
    assert stdout.splitlines() == ["['HOME', 'LANG', 'LC_ALL', 'PATH', 'TMPDIR']", "True"]


def test_the_humaneval_example_project_passes_its_canonical_solutions(tmp_path, monkeypatch, cli):
    project = tmp_path / "humaneval"
    shutil.copytree(REPO / "examples" / "humaneval", project)
    monkeypatch.chdir(project)
    assert cli("validate").exit_code == 0
    result = cli("run", "experiments/humaneval.yaml")
    assert result.exit_code == 0, result.output
    (run,) = runs_by_arm(project).values()
    assert [c["scores"][0]["label"] for c in run.cases] == ["passed"] * 15
    assert run.header.dataset.dataset_id == "humaneval_sample@de4065970597"


def score_one(spec: dict, output: str, row: dict):
    from evalsite.scoring.case import score_case
    from evalsite.scoring.evaluators import CaseView, build_evaluators

    evaluators = build_evaluators([{"type": "code_tests", **spec}])
    view = CaseView(input=row.get("input"), output=output, expected=None, row=row)
    (score,) = asyncio.run(score_case(evaluators, view, None)).scores
    return score


def test_mbpp_rows_whole_solutions_and_fenced_replies():
    row = {"input": "Write add(a, b).", "test_list": ["assert add(1, 2) == 3", "assert add(-1, 1) == 0"]}
    spec = {"include_prompt": False, "tests_field": "test_list", "entry_point_field": None}
    fenced = "```python\ndef add(a, b):\n    return a + b\n```"
    assert (score_one(spec, fenced, row).label, score_one(spec, "def add(a, b):\n    return a - b\n", row).label) == (
        "passed", "failed")


def test_a_row_without_its_tests_is_a_scoring_error_not_a_zero():
    score = score_one({}, "    return 1\n", {"input": "def f():\n", "entry_point": "f"})
    assert (score.score, score.error) == (None, "row has no text field 'tests' (code_tests needs it; see its *_field params)")


@pytest.mark.parametrize(("spec", "message"), [
    ({"workers": 0}, "workers: needs a whole number from 1 to 64, got 0"),
    ({"timeout_s": None}, "timeout_s: code_tests needs a wall-clock limit in seconds, not null"),
    # past ~9.2e9 s the wait's select() overflowed: every case's score an OverflowError, the run "completed"
    ({"timeout_s": 1e10}, "timeout_s: needs at most 86400 seconds (a day) for one program, got 1e+10"),
    ({"memory_mb": "lots"}, "memory_mb: needs a whole number, got 'lots'"),
    ({"include_prompt": "yes"}, "include_prompt: needs true or false, got 'yes'"),
])
def test_bad_settings_name_the_key(spec, message):
    from evalsite.errors import EvaluatorError
    from evalsite.scoring.evaluators import build_evaluators

    with pytest.raises(EvaluatorError) as raised:
        build_evaluators([{"type": "code_tests", **spec}])
    assert raised.value.message == f"evaluators[0] (code_tests): {message}"


def test_the_limits_are_in_the_version_and_workers_is_not():
    from evalsite.scoring.evaluators import build_evaluators

    def version(**spec):
        (evaluator,) = build_evaluators([{"type": "code_tests", **spec}])
        return evaluator.version

    assert version(workers=2) == version(workers=8)
    assert len({version(), version(timeout_s=3), version(memory_mb=256), version(cpu_s=2)}) == 4


def landlock_abi() -> int:
    """The kernel's Landlock ABI version (0: none), probed as the sandbox probes it."""
    if sys.platform != "linux":
        return 0
    libc = ctypes.CDLL(None, use_errno=True)
    return int(libc.syscall(sandbox_child.LANDLOCK_CREATE_RULESET, None, 0, sandbox_child.LANDLOCK_CREATE_RULESET_VERSION))


@pytest.mark.skipif(landlock_abi() < 4, reason="Landlock's TCP rules need Linux 6.7+ with Landlock enabled")
def test_tcp_connections_are_refused_unless_the_network_is_allowed():
    with socket.create_server(("127.0.0.1", 0)) as listener:
        port = listener.getsockname()[1]
        row = {"tests": f"import socket\nsocket.create_connection(('127.0.0.1', {port}), timeout=1).close()\n"}
        spec = {"include_prompt": False, "entry_point_field": None}
        refused = score_one(spec, "", row)
        listener.settimeout(0.01)
        with pytest.raises(TimeoutError):
            listener.accept()  # nothing reached the listener
        allowed = score_one({**spec, "network": True}, "", row)
    assert (refused.label, refused.detail.splitlines()[0].rsplit(" (", 1)[0]) == (
        "error", "PermissionError: [Errno 13] Permission denied (program.py line 4)")  # after the empty output
    assert allowed.label == "passed"


def test_pass_at_k_of_a_sampled_arm_in_noise_json(humaneval_project, cli):
    """Six problems, three samples each, every problem solved in exactly one sample: by hand,
    pass@1 = 1/3, pass@2 = 1 - C(2,2)/C(3,2) = 2/3, pass@3 = 1 on every problem."""
    rows = SAMPLE.read_text().splitlines()[:6]
    (humaneval_project / "data" / "humaneval.jsonl").write_text("\n".join(rows) + "\n")
    (humaneval_project / "code_arms.py").write_text(ARMS + '''

def sampled(row, repeat):
    return row["output"] if (number(row) + repeat) % 3 == 0 else "    return None\\n"
''')
    manifest = write_manifest(humaneval_project)
    document = yaml.safe_load((humaneval_project / manifest).read_text())
    document["arms"], document["repeat"] = [{"id": "sampled", "target": "python:code_arms:sampled"}], 3
    (humaneval_project / manifest).write_text(yaml.safe_dump(document))
    cli("run", manifest)
    run_id = runs_by_arm(humaneval_project)["sampled"].run_id
    by_k = {k: json.loads(cli("noise", run_id, "--k", str(k), "--json").output) for k in (1, 2, 3)}
    assert [by_k[k]["mean_pass_at_k"] for k in (1, 2, 3)] == pytest.approx([1 / 3, 2 / 3, 1.0])
    assert json.loads(cli("noise", run_id, "--json").output)["k"] == 3
