"""The runner's own CPU per case, without the network: ``execute_plan`` over N cases of the
``openai`` target whose HTTP post (``JsonClient.post``) answers in process at once (one pass of
the event loop, then a fixed chat-completions reply), no evaluators, progress off, the collector's
youngest generation at 10,000 as ``evalsite run`` sets it.

What it leaves out is the floor under any runner that keeps httpx as the API (the request, the
transport, the reply read; bench/httpx_floor.py) and the start-up; what it times is everything the
runner does around each call (the request, the retry and timeout wrapper, the reply parsed and
checked, the case line built, encoded, hashed and appended, progress and cost accounting) and the
run's header and footer. It imports whichever evalsite is on ``PYTHONPATH``, so two checkouts
compare in turn:

    PYTHONPATH=. python bench/runner_own.py [--cases 6000]
    PYTHONPATH=../main python bench/runner_own.py

prints one JSON line: CPU seconds of ``execute_plan`` and µs a case.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from evalsite.calls.targets.http import JsonClient
from evalsite.execute.runner import execute_plan
from evalsite.experiment.manifest import load_manifest
from evalsite.experiment.plan import build_plan
from evalsite.project import find_project

HEADERS = httpx.Headers({"content-type": "application/json", "content-length": "230"})


async def answer_at_once(self: JsonClient, path: str, body: dict[str, Any], headers: Any = None) -> tuple[dict, Any]:
    await asyncio.sleep(0)
    content = body["messages"][-1]["content"]
    message = {"role": "assistant", "content": f"echo: {content}"}
    return (
        {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "model": body["model"],
            "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 5, "completion_tokens": 4, "total_tokens": 9},
        },
        HEADERS,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=6000)
    cases = parser.parse_args().cases
    JsonClient.post = answer_at_once  # type: ignore[method-assign]
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        (root / "data").mkdir()
        (root / "experiments").mkdir()
        rows = (
            json.dumps({"id": f"b{n}", "input": f"question {n}", "expected": f"echo: question {n}"})
            for n in range(cases)
        )
        (root / "data" / "bench.jsonl").write_text("\n".join(rows) + "\n")
        arm = {"id": "own", "target": "openai:bench", "settings": {"base_url": "http://127.0.0.1:9/v1"}}
        manifest = {
            "name": "bench",
            "dataset": {"path": "data/bench.jsonl"},
            "arms": [arm],
            "evaluators": [],
            "concurrency": 32,
            "limits": {"max_cases": cases},
        }
        (root / "experiments" / "bench.json").write_text(json.dumps(manifest))
        os.chdir(root)
        project = find_project(root)
        plan = build_plan(project, load_manifest(root / "experiments" / "bench.json"))
        import evalsite.analysis.summary  # noqa: F401  (the footer's numpy, out of the timing)

        gc.set_threshold(10_000)
        started = time.process_time()
        batch = execute_plan(project, plan)
        cpu = time.process_time() - started
        (run,) = batch.runs
        assert run.status == "completed" and run.summary.errors == 0, run.summary
    print(json.dumps({"cases": cases, "cpu": round(cpu, 4), "us_per_case": round(cpu / cases * 1e6, 1)}))


if __name__ == "__main__":
    main()
