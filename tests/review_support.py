"""A project for human-review tests: twelve questions, two arms (one always right, one wrong on
every third question, briefly on odd ones) and an offline judge that passes any answer of four characters or fewer,
so it sometimes disagrees with a reviewer who checks the answer against the expected one."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

ROWS = [{"id": f"q{n:02d}", "input": f"spell {n}", "expected": f"n{n}"} for n in range(12)]
ARMS = '''
def right(input):
    return "n" + input.split()[1]

def sloppy(input):
    n = int(input.split()[1])
    if n % 3:
        return "n" + str(n)
    return "x" + str(n) if n % 2 else "wrong answer " + str(n)
'''
JUDGE = '''
import json

def grade(input):
    output = input[-1]["content"].split("Output to grade:\\n", 1)[1].split("\\n\\n", 1)[0]
    short = len(output.strip()) <= 4
    return json.dumps({"score": 9 if short else 2, "reason": "short answer" if short else "long answer"})
'''
MANIFEST = '''
name: review
dataset:
  path: data/review.jsonl
arms:
  - id: right
    target: python:review_arms:right
  - id: sloppy
    target: python:review_arms:sloppy
evaluators:
  - type: exact
  - type: llm_judge
    name: brief
    judge: python:review_judge:grade
'''
MODULES = ("review_arms", "review_judge")


def make_review_project(root: Path) -> Path:
    """Write the project into ``root`` (which must be the working folder when it runs)."""
    (root / "data").mkdir()
    (root / "experiments").mkdir()
    (root / "data" / "review.jsonl").write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    (root / "review_arms.py").write_text(textwrap.dedent(ARMS))
    (root / "review_judge.py").write_text(textwrap.dedent(JUDGE))
    (root / "experiments" / "review.yaml").write_text(MANIFEST)
    return root


def human_rating(case: dict) -> str:
    """How the tests' reviewer rates a case: pass when the answer is the expected one."""
    return "pass" if case["output"] == case["expected"] else "fail"
