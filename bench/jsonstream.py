"""Why the importers stream JSON with their own reader rather than ijson: CPU and memory of each.

Rerun from the repository root (ijson is not a dependency: ``pip install ijson`` to compare):

    python bench/jsonstream.py                   # a 20,000-case promptfoo results.json (~110 MB)
    python bench/jsonstream.py --cases 6000 --runs 7

Three readers each count the elements of ``results.results`` of the same file, in a child
process (so each figure is a whole process: the interpreter, imports and the read):

- ``evalsite``: :class:`evalsite.execute.importers.jsonstream.JsonArrayStream`, which also keeps
  the rest of the document (what the importers read: config, stats, the eval's header);
- ``ijson items``: ``ijson.items(f, "results.results.item")`` on the C backend — the array only,
  not the rest, so less than the importers need;
- ``ijson events``: the same contract as ``evalsite`` (the array streamed, the rest kept) built
  from ``ijson.parse`` events, the way ijson offers it.

Each figure is the median over ``--runs`` of user+system CPU seconds and peak resident memory.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

READERS = {
    "evalsite": """
import sys
from evalsite.execute.importers.jsonstream import JsonArrayStream
stream = JsonArrayStream(sys.argv[1], ("results", "results"))
print(sum(1 for _ in stream), len(stream.rest))
""",
    "ijson items": """
import sys, ijson
with open(sys.argv[1], "rb") as handle:
    print(sum(1 for _ in ijson.items(handle, "results.results.item", use_float=True)))
""",
    "ijson events": """
import sys, ijson
from ijson.common import ObjectBuilder
ARRAY, ITEM = "results.results", "results.results.item"
rest, item, count = ObjectBuilder(), None, 0
with open(sys.argv[1], "rb") as handle:
    for prefix, event, value in ijson.parse(handle, use_float=True):
        if prefix == ARRAY:
            continue
        if prefix.startswith(ITEM):
            item = item or ObjectBuilder()
            item.event(event, value)
            if prefix == ITEM and event in ("end_map", "end_array", "string", "number", "boolean", "null"):
                count, item = count + 1, None
            continue
        rest.event(event, value)
print(count, len(rest.value))
""",
}


def measure(code: str, path: Path) -> tuple[float, float]:
    """CPU seconds (user + system) and peak RSS in MB of one child running ``code`` on ``path``."""
    child = subprocess.Popen([sys.executable, "-c", code, str(path)], env={**os.environ, "PYTHONPATH": str(REPO)},
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(child.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(child.stderr.read().decode())
    return usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=20000)
    parser.add_argument("--runs", type=int, default=5)
    options = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="evalsite-jsonstream-"))
    made = subprocess.run([sys.executable, str(REPO / "bench" / "importers.py"), "--generate", "promptfoo",
                           "--cases", str(options.cases), "--keep", str(work)], check=True, capture_output=True, text=True)
    path = Path(made.stdout.strip())
    print(f"{path.name}: {path.stat().st_size / 1e6:.0f} MB, {options.cases} cases, median of {options.runs} runs")
    try:
        import ijson  # noqa: F401
        names = list(READERS)
    except ImportError:
        names = ["evalsite"]
        print("(ijson is not installed: pip install ijson to compare)")
    for name in names:
        figures = [measure(READERS[name], path) for _ in range(options.runs)]
        print(f"{name:13s} cpu {statistics.median(f[0] for f in figures):5.2f} s   "
              f"peak {statistics.median(f[1] for f in figures):4.0f} MB")
    path.unlink()


if __name__ == "__main__":
    main()
