"""What ``evalsite run`` loads before its first call: numpy (for the footer's run summary and
``stop_when``'s walk only) is imported in a thread while the calls are in flight, and a dry run
never imports it. Each probe is a fresh interpreter, as the command is."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from example_support import REPO
from runner_support import only_run, questions, write_experiment

PROBE = """
import json, sys, threading
importers = []
def hook(event, args):
    if event == "import" and args[0] == "numpy":
        importers.append(threading.current_thread().name)
sys.addaudithook(hook)
from evalsite.cli import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
print(json.dumps({"importers": importers, "loaded": "numpy" in sys.modules}))
"""


def probe(project: Path, *args: str) -> dict:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [sys.executable, "-c", PROBE, "run", *args],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def echo_project(root: Path) -> str:
    (root / "echo.py").write_text("def answer(input):\n    return 'echo: ' + input\n")
    return write_experiment(root, questions(5), [{"id": "echo", "target": "python:echo:answer"}])


def test_numpy_is_imported_while_the_calls_run_not_before_them(runner_project):
    manifest = echo_project(runner_project)
    assert probe(runner_project, manifest) == {"importers": ["evalsite-import"], "loaded": True}
    run = only_run(runner_project)
    assert run.status == "completed" and run.footer is not None
    assert run.footer.totals.cases == 5 and run.footer.totals.pass_rate == 1.0


def test_a_dry_run_imports_no_numpy(runner_project):
    manifest = echo_project(runner_project)
    assert probe(runner_project, manifest, "--dry-run") == {"importers": [], "loaded": False}
