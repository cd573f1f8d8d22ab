"""Outputs for CI systems: the GitHub step summary (or any markdown file) and JUnit XML."""

from __future__ import annotations

import os
import xml.etree.ElementTree as ElementTree
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from evalsite.errors import EvalsiteError


@dataclass(frozen=True)
class TestOutcome:
    """One JUnit test case: ``failure`` and ``skipped`` carry the message when set."""

    name: str
    classname: str
    failure: str | None = None
    error: str | None = None
    skipped: str | None = None
    seconds: float = 0.0


def summary_targets(summary_file: Path | None) -> list[Path]:
    """Where a markdown summary goes: ``--summary FILE`` and ``$GITHUB_STEP_SUMMARY`` when set."""
    targets = [Path(summary_file)] if summary_file else []
    if step_summary := os.environ.get("GITHUB_STEP_SUMMARY"):
        targets.append(Path(step_summary))
    return targets


def write_summary(markdown: str, summary_file: Path | None) -> None:
    """Append ``markdown`` to every summary target (GitHub's step summary is shared by steps)."""
    for path in summary_targets(summary_file):
        try:
            with open(path, "a", encoding="utf-8") as handle:
                handle.write(markdown.rstrip("\n") + "\n\n")
        except OSError as exc:
            raise EvalsiteError(f"{path}: cannot write the summary: {exc.strerror}") from None


def markdown_table(rows: Sequence[Mapping[str, object]], columns: list[str]) -> str:
    def cell(value: object) -> str:
        if value is None:
            return "—"
        if isinstance(value, float):
            return f"{value:.3f}"
        return str(value).replace("|", "\\|").replace("\n", " ")

    lines = ["| " + " | ".join(columns) + " |", "|" + " --- |" * len(columns)]
    lines += ["| " + " | ".join(cell(row.get(c)) for c in columns) + " |" for row in rows]
    return "\n".join(lines)


def write_junit(path: Path, suite_name: str, outcomes: list[TestOutcome]) -> None:
    """Write one ``<testsuite>`` of JUnit XML, the shape CI systems display."""
    suite = ElementTree.Element(
        "testsuite",
        name=suite_name,
        tests=str(len(outcomes)),
        failures=str(sum(1 for o in outcomes if o.failure is not None)),
        errors=str(sum(1 for o in outcomes if o.error is not None)),
        skipped=str(sum(1 for o in outcomes if o.skipped is not None)),
        time=f"{sum(o.seconds for o in outcomes):.3f}",
    )
    for outcome in outcomes:
        case = ElementTree.SubElement(
            suite, "testcase", name=outcome.name, classname=outcome.classname, time=f"{outcome.seconds:.3f}"
        )
        for tag in ("failure", "error", "skipped"):
            message = getattr(outcome, tag)
            if message is not None:
                ElementTree.SubElement(case, tag, message=message).text = message
    root = ElementTree.Element("testsuites")
    root.append(suite)
    tree = ElementTree.ElementTree(root)
    ElementTree.indent(tree)
    try:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        tree.write(path, encoding="utf-8", xml_declaration=True)
    except OSError as exc:
        raise EvalsiteError(f"{path}: cannot write JUnit XML: {exc.strerror}") from None
