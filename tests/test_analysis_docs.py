"""The analysis docs: the Python API examples run as written, and every command and option is
documented in docs/reference/commands/analysis.md."""

from __future__ import annotations

import doctest
import re

import pytest
from example_support import REPO

from evalsite.cli import COMMANDS as ALL_COMMANDS
from evalsite.cli import main

COMMANDS = [main.commands[entry.name] for entry in ALL_COMMANDS if entry.target.startswith("analysis:")]

API = REPO / "docs" / "reference" / "python-api.md"
COMMANDS_DOC = REPO / "docs" / "reference" / "commands" / "analysis.md"


def test_python_api_examples_run_in_the_example_project(example_with_runs):
    result = doctest.testfile(str(API), module_relative=False, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 10
    assert result.failed == 0


def section(name: str) -> str:
    text = COMMANDS_DOC.read_text()
    match = re.search(rf"^## evalsite {re.escape(name)}\n(.*?)(?=^## |\Z)", text, re.MULTILINE | re.DOTALL)
    assert match, f"no section '## evalsite {name}'"
    return match.group(1)


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c.name)
def test_every_command_and_option_is_documented_and_takes_json(command):
    body = section(command.name)
    options = [opt for param in command.params for opt in param.opts if opt.startswith("--")]
    assert "--json" in options
    for option in options:
        assert f"`{option}" in body, f"{command.name}: {option} is not in its options table"
    assert "```console" in body, f"{command.name}: no example output"
