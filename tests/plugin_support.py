"""The example plugin package (tests/plugin_example/) and the small project that uses it."""

from __future__ import annotations

from example_support import REPO

PLUGIN = REPO / "tests" / "plugin_example"
MANIFEST = """\
name: loud
dataset: {path: data/words.jsonl}
arms:
  - {id: shouty, target: "shout:!!"}
  - {id: quiet, target: none}
evaluators:
  - {type: shouted}
"""
ROWS = [{"id": "w1", "input": "hello", "output": "hello"}, {"id": "w2", "input": "Big news", "output": "BIG NEWS"}]
TSV = "arm\tid\tinput\toutput\tpassed\nmodel-a\tw1\thello\tHELLO\tyes\nmodel-a\tw2\tbye\tbye\tno\n"
