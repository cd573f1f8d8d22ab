"""``evalsite run`` in a CI log (stderr not a terminal) says how far it is, in plain lines."""

from __future__ import annotations

import json
import re
import subprocess
import sys

PROGRESS = re.compile(r"^recorded: ([\d,]+)/2,000 cases \(\d+%\), errors 0, ")


def test_a_run_whose_stderr_is_a_pipe_writes_progress_lines(tmp_path):
    (tmp_path / "data").mkdir()
    (tmp_path / "experiments").mkdir()
    rows = [{"id": f"q{n}", "input": f"q{n}", "expected": "a", "output": "a" if n % 3 else "b"} for n in range(2000)]
    (tmp_path / "data" / "q.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    (tmp_path / "experiments" / "e.yaml").write_text(
        "name: e\ndataset: {path: data/q.jsonl}\narms:\n  - id: recorded\n    target: none\nevaluators:\n  - type: exact\n")
    done = subprocess.run([sys.executable, "-m", "evalsite", "run", "experiments/e.yaml", "--allow-failures"],
                          cwd=tmp_path, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    counts = [int(m.group(1).replace(",", "")) for m in map(PROGRESS.match, done.stderr.splitlines()) if m]
    assert counts[0] == 0 and counts[-1] == 2000  # a start and an end, and a line every 5 % a second apart
    assert counts == sorted(counts)
    quiet = subprocess.run([sys.executable, "-m", "evalsite", "--quiet", "run", "experiments/e.yaml", "--allow-failures"],
                           cwd=tmp_path, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=300)
    assert quiet.returncode == 0 and not any(map(PROGRESS.match, quiet.stderr.splitlines()))
