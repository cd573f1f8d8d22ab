"""Read the site's data scripts (data/**.js) back in Python, decoded as static/data.js decodes them."""

from __future__ import annotations

import json
from pathlib import Path

from evalsite.site import paths

STATUSES = ("passed", "failed", "errored", "unscored")


def payload(path: Path):
    """The payload of one data script ``evalsiteData("key", …);``."""
    text = Path(path).read_text(encoding="utf-8")
    assert text.startswith("evalsiteData(") and text.endswith(");\n"), path
    key, _, rest = text[len("evalsiteData("):-3].partition(",")
    return json.loads(rest)


ITEM_TEXT = -1


def decode(part: dict, items: dict | None = None) -> list[dict]:
    """A part's cases; ``items`` is the item texts file the part names (``it``), which fills the
    inputs and expected values marked ``ITEM_TEXT``."""
    s = part["s"]
    text = lambda i: None if i is None else s[i]  # noqa: E731
    shared = (items or {}).get("items", {})

    def item_text(i, item, slot):
        if i != ITEM_TEXT:
            return text(i)
        return shared[s[item]][slot]

    cut: dict[int, dict] = {}
    for key, pairs in part["cut"].items():
        for n in range(0, len(pairs), 2):
            cut.setdefault(pairs[n], {})[key] = pairs[n + 1]
    return [{
        "item_id": s[item], "ord": part["ord"][row], "repeat": part["rep"][row], "status": STATUSES[part["st"][row]],
        "critical": None if part["crit"][row] is None else part["crit"][row] == 1,
        "input": item_text(part["in"][row], item, 0), "expected": item_text(part["exp"][row], item, 1), "output": text(part["out"][row]),
        "cut": cut.get(row, {}), "score": part["score"][row], "latency_ms": part["lat"][row], "cost_usd": part["cost"][row],
        "error": text(part["err"][row]), "cache": text(part["cache"][row]),
        "anchor": f"item-{s[item]}" if part["anc"][row] is None else s[part["anc"][row]],
        "scores": [{"evaluator": part["ev"][v[0]], "score": v[1], "passed": None if v[2] is None else v[2] == 1,
                    "label": text(v[3]), "detail": text(v[4]), "error": text(v[5]), "skipped": v[6] == 1} for v in part["sc"][row]],
    } for row, item in enumerate(part["item"])]


def run_cases(site: Path, run_id: str) -> list[dict]:
    """Every case of a run from its data scripts, in the listing's order."""
    index = payload(site / paths.run_data_index(run_id))
    cases = []
    for bucket, count in index["parts"].items():
        for part in range(count):
            found = payload(site / paths.run_data(run_id, bucket, part))
            items = payload(site / found["it"]) if "it" in found else None
            cases += [dict(c, bucket=bucket) for c in decode(found, items)]
    return sorted(cases, key=lambda c: c["ord"])


def matrix_rows(site: Path, name: str) -> list[list]:
    rows: list[list] = []
    part = 0
    while (site / paths.matrix_data(name, part)).is_file():
        rows += payload(site / paths.matrix_data(name, part))
        part += 1
    return rows
