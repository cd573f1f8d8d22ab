"""The comparison tests' project (the ``golden_project`` fixture): twelve questions, one offline
arm whose wrong answers are chosen per test, and helpers that run it through the CLI and return
the new run id.

The arm lives in a top-level module of its own name (``golden_arm``), not in a package shared
with the example project, because a process imports a module name once.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

ITEMS = [f"g{n:02d}" for n in range(1, 13)]
CRITICAL = "g03"

ARM_SOURCE = '''
def answer(row, params, repeat):
    """``A<n>`` for question ``Q<n>``; ``wrong`` (and ``wrong_in_repeat[repeat]``) item ids answer "nope"."""
    wrong = set(params.get("wrong", [])) | set(params.get("wrong_in_repeat", {}).get(str(repeat), []))
    return "nope" if row["id"] in wrong else "A" + row["input"][1:]
'''


def golden_rows() -> list[dict]:
    rows = []
    for item_id in ITEMS:
        number = int(item_id[1:])
        row = {"id": item_id, "input": f"Q{number}", "expected": f"A{number}"}
        if item_id == CRITICAL:
            row["metadata"] = {"critical": True}
        rows.append(row)
    return rows


def write_dataset(project: Path, rows: list[dict]) -> None:
    (project / "data" / "golden.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def edit_row(project: Path, item_id: str, **changes) -> None:
    """Change fields of one dataset row (a value of ``None`` removes the field)."""
    path = project / "data" / "golden.jsonl"
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    for row in rows:
        if row["id"] == item_id:
            for key, value in changes.items():
                if value is None:
                    row.pop(key, None)
                else:
                    row[key] = value
    write_dataset(project, rows)


def write_manifest(project: Path, *, arm: str = "main", params: dict | None = None,
                   evaluators: list[dict] | None = None, repeat: int = 1) -> str:
    manifest = {
        "name": "golden",
        "dataset": {"path": "data/golden.jsonl"},
        "repeat": repeat,
        "arms": [{"id": arm, "target": "python:golden_arm:answer", "params": params or {}}],
        "evaluators": evaluators if evaluators is not None else [{"type": "exact"}],
    }
    path = project / "experiments" / "golden.json"
    path.write_text(json.dumps(manifest, indent=2), encoding="utf-8")
    return "experiments/golden.json"


def run_ids(project: Path) -> set[str]:
    runs = project / "runs"
    return {p.name for p in runs.iterdir() if p.is_dir()} if runs.is_dir() else set()


def run_arm(cli, project: Path, **manifest) -> str:
    """Run the golden manifest with these settings through the CLI; the new run's id."""
    before = run_ids(project)
    result = cli("run", write_manifest(project, **manifest))
    assert result.exit_code in (0, 1), result.output
    (new,) = run_ids(project) - before
    return new


def interrupt(project: Path, run_id: str, keep: int) -> None:
    """Make a run look like a crash after ``keep`` cases: drop the footer and the later lines."""
    directory = project / "runs" / run_id
    (directory / "end.json").unlink()
    lines = (directory / "cases.jsonl").read_text().splitlines(keepends=True)
    (directory / "cases.jsonl").write_text("".join(lines[:keep]))


def git(project: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(project), *args], capture_output=True, text=True, check=True)
    return done.stdout.strip()


def commit_all(project: Path) -> None:
    """Make the project a clean git checkout (runs/ ignored), as a user would before promoting."""
    if not (project / ".git").exists():
        git(project, "init", "-q", "-b", "main")
        git(project, "config", "user.name", "Ada Lovelace")
        git(project, "config", "user.email", "ada@example.org")
        (project / ".gitignore").write_text("runs/\n__pycache__/\n")
    git(project, "add", "-A")
    git(project, "commit", "-q", "-m", "snapshot")
