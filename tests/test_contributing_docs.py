"""CONTRIBUTING.md: every path and link it names exists, and what it says about the test run holds."""

from __future__ import annotations

import re
import tomllib

from example_support import REPO

PAGE = REPO / "CONTRIBUTING.md"


def test_every_named_path_and_link_exists():
    text = PAGE.read_text()
    named = re.findall(r"`((?:evalsite|tests|docs)/[\w/.]+)`", text) + re.findall(r"\]\(([^)#]+)\)", text)
    assert len(named) > 10
    missing = [path for path in named if not (REPO / path).exists()]
    assert not missing, missing


def test_the_test_settings_are_the_ones_described():
    pytest_settings = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
    assert "-n auto --dist loadfile" in pytest_settings["addopts"] and "-n auto --dist loadfile" in PAGE.read_text()
    assert any(marker.startswith("slow:") for marker in pytest_settings["markers"])
