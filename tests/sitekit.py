"""Helpers for the site tests: write run folders directly, and parse built pages into a small tree
(``parse``: the one HTML parser of the test suite, with ``find``/``find_all``/``text`` and ``table_rows``)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path

VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}


def case(item_id: str, *, score: float | None = 1.0, passed: bool | None = True, output="ok", input="question?",
         expected="ok", repeat: int = 0, latency_ms: float = 10.0, cost_usd: float | None = None,
         error: str | None = None, detail: str | None = None, evaluator: str = "exact", version: str = "v1") -> dict:
    scores = [] if score is None and passed is None else [{
        "evaluator": evaluator, "version": version, "score": score, "passed": passed, "label": None,
        "detail": detail, "error": None, "skipped": False}]
    return {
        "item_id": item_id, "item_sha": "sha-" + item_id, "repeat": repeat, "input": input, "expected": expected,
        "output": output, "error": error, "latency_ms": latency_ms, "input_tokens": 3, "output_tokens": 1,
        "cost_usd": cost_usd, "finish_reason": "stop", "scores": scores, "score": score, "passed": passed,
        "started_at": "2026-01-01T00:00:00.000Z",
    }


def write_run(runs_dir: Path, run_id: str, cases: list[dict], *, arm: str = "a", experiment: str = "exp",
              dataset_id: str = "data@000000000000", evaluators: dict | None = None, status: str | None = "completed",
              config: dict | None = None, dataset_path: str = "data/data.jsonl", fingerprint_hash: str = "fp") -> Path:
    """A run folder as the runner writes it (``status=None`` leaves out end.json: interrupted)."""
    directory = runs_dir / run_id
    directory.mkdir(parents=True)
    evaluators = {"exact": {"type": "exact", "version": "v1"}} if evaluators is None else evaluators
    header = {
        "format_version": 1, "run_id": run_id, "batch_id": "b", "experiment": experiment, "arm_id": arm,
        "config": config or {"arm_id": arm, "params": {}}, "config_id": f"cfg-{arm}",
        "dataset": {"path": dataset_path, "dataset_id": dataset_id, "items": len({c["item_id"] for c in cases})},
        "evaluators": evaluators, "fingerprint": {"dataset": {"dataset_id": dataset_id}, "config_id": f"cfg-{arm}"},
        "fingerprint_hash": fingerprint_hash, "started_at": _started_at(run_id),
    }
    (directory / "run.json").write_text(json.dumps(header), encoding="utf-8")
    (directory / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases), encoding="utf-8")
    if status is not None:
        (directory / "end.json").write_text(json.dumps({"status": status, "ended_at": "2026-01-01T00:01:00.000Z"}))
    return directory


def _started_at(run_id: str) -> str:
    """The start time a run id encodes (``20260101T000000Z-…`` → ``2026-01-01T00:00:00.000Z``)."""
    t = run_id[:15]
    return f"{t[0:4]}-{t[4:6]}-{t[6:8]}T{t[9:11]}:{t[11:13]}:{t[13:15]}.000Z"


#: Markup a run could try to smuggle into a page; write_hostile_project puts it in every run-controlled string.
PAYLOADS = [
    "<script>window.__xss=1</script>",
    '<img src=x onerror="window.__xss=2">',
    "</textarea><script>window.__xss=3</script><textarea>",
    '"><svg onload=window.__xss=4>',
    "'><iframe src=javascript:window.__xss=5></iframe>",
]
EVIL = " ".join(PAYLOADS)


def write_hostile_project(root: Path) -> Path:
    """A project whose every run-controlled string carries the payloads."""
    (root / "experiments").mkdir(parents=True)
    (root / "experiments/evil.yaml").write_text(
        "name: evil\ndescription: |\n  Look " + EVIL.replace("\n", " ") + "\n  [click](javascript:window.__xss=6)\n"
        "dataset:\n  path: data/d.jsonl\narms:\n  - id: a\n    target: none\n")
    runs = root / "runs"
    hostile = [
        case(f"item{n}{payload}", input=payload, expected=payload, output=f"{payload} answer {n}", detail=payload,
             error=payload if n == 0 else None, passed=n % 2 == 0, score=float(n % 2 == 0), cost_usd=0.001 * (n + 1))
        for n, payload in enumerate(PAYLOADS)
    ]
    for index, arm in enumerate(["plain", PAYLOADS[1]]):
        cases = [dict(c, output=c["output"] + ("" if index == 0 else " differs"), finish_reason=PAYLOADS[3]) for c in hostile]
        for c in cases:
            c["scores"][0]["label"] = PAYLOADS[0]
        write_run(runs, f"20260101T00000{index}Z-arm{index}-000{index}", cases, arm=arm, experiment="evil",
                  dataset_id="evil@000000000000", evaluators={"exact": {"type": "exact", "version": "v1"}})
    (runs / "decisions.jsonl").write_text(json.dumps({
        "decision": "promote", "run_id": "20260101T000000Z-arm0-0000", "reason": EVIL, "dataset_id": PAYLOADS[2],
        "inputs_id": None, "arm_id": PAYLOADS[1], "at": "2026-01-02T00:00:00Z", "by": PAYLOADS[0],
        "fingerprint_hash": PAYLOADS[4]}) + "\n")
    return root


@dataclass
class Node:
    tag: str
    attrs: dict
    children: list = field(default_factory=list)

    def text(self) -> str:
        return "".join(c if isinstance(c, str) else c.text() for c in self.children)

    def iter(self):
        for child in self.children:
            if isinstance(child, Node):
                yield child
                yield from child.iter()

    def find_all(self, tag: str, **attrs) -> list[Node]:
        wanted = {k.rstrip("_"): v for k, v in attrs.items()}
        return [n for n in self.iter() if n.tag == tag and all(
            v in (n.attrs.get(k) or "").split() if k == "class" else n.attrs.get(k) == v for k, v in wanted.items())]

    def find(self, tag: str, **attrs) -> Node:
        found = self.find_all(tag, **attrs)
        assert found, f"no <{tag} {attrs}>"
        return found[0]


class _Builder(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.root = Node("#document", {})
        self.stack = [self.root]

    def handle_starttag(self, tag, attrs):
        node = Node(tag, dict(attrs))
        self.stack[-1].children.append(node)
        if tag not in VOID:
            self.stack.append(node)

    def handle_endtag(self, tag):
        for index in range(len(self.stack) - 1, 0, -1):
            if self.stack[index].tag == tag:
                del self.stack[index:]
                return

    def handle_data(self, data):
        self.stack[-1].children.append(data)


def parse(path: Path) -> Node:
    builder = _Builder()
    builder.feed(Path(path).read_text(encoding="utf-8"))
    return builder.root


def table_rows(table: Node) -> list[list[str]]:
    body = table.find("tbody")
    return [[" ".join(td.text().split()) for td in tr.find_all("td")] for tr in body.find_all("tr")]


def tree_bytes(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}
