"""Outputs for CI systems: the GitHub step summary (or any markdown file) and JUnit XML."""

from __future__ import annotations

import logging
import os
import tempfile
import xml.etree.ElementTree as ElementTree
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from evalsite.analysis.wording import is_p_column, p_text
from evalsite.errors import EvalsiteError, OutputError

STEP_SUMMARY_ENV = "GITHUB_STEP_SUMMARY"  # the job summary file GitHub Actions gives each step
log = logging.getLogger(__name__)


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
    if step_summary := os.environ.get(STEP_SUMMARY_ENV):
        targets.append(Path(step_summary))
    return targets


def write_summary(markdown: str, summary_file: Path | None) -> None:
    """Append ``markdown`` to every summary target (GitHub's step summary is shared by steps)."""
    for path in summary_targets(summary_file):
        try:
            with open(path, "a", encoding="utf-8") as handle:
                handle.write(markdown.rstrip("\n") + "\n\n")
            log.debug("appended the markdown summary to %s", path)
        except OSError as exc:
            raise EvalsiteError(f"{path}: cannot write the summary: {exc.strerror}") from None


def markdown_table(rows: Sequence[Mapping[str, object]], columns: list[str]) -> str:
    def cell(value: object, column: str) -> str:
        if value is None:
            return "—"
        if isinstance(value, float):
            return p_text(value) if is_p_column(column) else f"{value:.3f}"
        return str(value).replace("|", "\\|").replace("\n", " ")

    lines = ["| " + " | ".join(columns) + " |", "|" + " --- |" * len(columns)]
    lines += ["| " + " | ".join(cell(row.get(c), c) for c in columns) + " |" for row in rows]
    return "\n".join(lines)


def junit_xml(suite_name: str, outcomes: list[TestOutcome]) -> str:
    """One ``<testsuite>`` of JUnit XML, the shape CI systems display."""
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
    ElementTree.indent(root)
    return "<?xml version='1.0' encoding='utf-8'?>\n" + ElementTree.tostring(root, encoding="unicode") + "\n"


def write_junit(path: Path, suite_name: str, outcomes: list[TestOutcome]) -> None:
    """Write :func:`junit_xml` to ``path`` atomically (creating its folder)."""
    try:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutputError(f"{path}: cannot write JUnit XML: {exc.strerror}") from None
    write_atomic(path, junit_xml(suite_name, outcomes))


def write_atomic(path: Path, text: str, *, make_folder: bool = False) -> None:
    """Write ``text`` to a temporary file beside ``path``, then rename it over ``path``: a reader
    (or an error) never sees half a file, and a failed write leaves no temporary file behind. The
    file gets the mode a plain ``open`` would give it under the umask (``mkstemp`` makes 0600, which
    a CI artifact step run as another user cannot read). ``make_folder``: create its folder first
    (a file where a folder of the path should be is the same one-line :class:`OutputError`)."""
    path = Path(path)
    if make_folder:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise OutputError(f"{path}: cannot make its folder {path.parent}: {exc.strerror or exc}") from None
    temporary: str | None = None
    try:
        descriptor, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        os.fchmod(descriptor, 0o666 & ~_umask())
        with os.fdopen(descriptor, "w", encoding="utf-8", newline="") as handle:
            handle.write(text)
        os.replace(temporary, path)
    except OSError as exc:
        if temporary is not None and os.path.exists(temporary):
            os.unlink(temporary)
        raise OutputError(f"{path}: cannot write: {exc.strerror or exc}") from None


def _umask() -> int:
    """The process's umask (reading it means setting it: set it straight back)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask
