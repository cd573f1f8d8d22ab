"""Every example in docs/reference/statistics.md runs and prints what the page says."""

from __future__ import annotations

import doctest
from pathlib import Path

REFERENCE = Path(__file__).resolve().parents[1] / "docs" / "reference" / "statistics.md"


def test_statistics_reference_examples_run_as_written():
    result = doctest.testfile(
        str(REFERENCE), module_relative=False, optionflags=doctest.NORMALIZE_WHITESPACE, verbose=False
    )
    assert result.attempted > 0
    assert result.failed == 0
