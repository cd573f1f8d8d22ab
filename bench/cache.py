"""Response cache: a study re-run from the cache against the same study run live.

One project, N questions to the ``openai`` target against the fake server (tests/fakeserver.py,
in its own process) answering after a fixed latency. Three runs through ``execute_plan`` as
``evalsite run`` does: ``off`` (live), ``record`` (live, storing every response) and
``replay`` (nothing called). Prints seconds and cases/s of each and the calls the server saw
during the replay (0 if the cache works).

Rerun: ``python bench/cache.py`` (defaults: 2,000 calls at 20 ms, concurrency 16).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.fake_provider import fake_provider  # noqa: E402
from bench.runner import write_project  # noqa: E402
from evalsite.execute.runner import execute_plan  # noqa: E402
from evalsite.experiment.manifest import load_manifest  # noqa: E402
from evalsite.experiment.plan import build_plan  # noqa: E402
from evalsite.project import find_project  # noqa: E402


def timed(root: Path, manifest: Path, mode: str) -> float:
    project = find_project(root)
    plan = build_plan(project, load_manifest(manifest))
    started = time.perf_counter()
    execute_plan(project, plan, cache=mode)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--latency", type=float, default=0.02)
    parser.add_argument("--concurrency", type=int, default=16)
    args = parser.parse_args()
    with fake_provider(args.latency) as provider, tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        arm = {"id": "http", "target": "openai:bench", "settings": {"base_url": f"{provider}/v1"}}
        manifest = write_project(root, args.calls, arm, args.concurrency, [])
        figures = {mode: timed(root, manifest, mode) for mode in ("off", "record", "replay")}
    for mode, seconds in figures.items():
        print(json.dumps({"mode": mode, "calls": args.calls, "seconds": round(seconds, 3),
                          "cases_per_s": round(args.calls / seconds, 1)}))


if __name__ == "__main__":
    main()
