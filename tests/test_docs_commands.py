"""Every command is listed in docs/reference/commands.md, linked to a page that documents it; the
top-level help points at docs that exist."""

from __future__ import annotations

import re
from pathlib import Path

from click.testing import CliRunner

from evalsite.cli import main

REFERENCE = Path(__file__).resolve().parent.parent / "docs" / "reference"
ROW = re.compile(r"^\| `([a-z-]+)` \| [^|]+ \| \[[^]]+\]\(([^)#]+)(?:#[^)]*)?\) \|$", re.MULTILINE)


def test_every_command_has_a_row_whose_page_names_it():
    rows = dict(ROW.findall((REFERENCE / "commands.md").read_text()))
    assert set(main.commands) <= set(rows), f"undocumented: {sorted(set(main.commands) - set(rows))}"
    for command, page in rows.items():
        if command not in main.commands:
            continue
        text = (REFERENCE / page).read_text()
        assert f"evalsite {command}" in text, f"{page} does not document `evalsite {command}`"


def test_the_top_level_help_ends_by_naming_docs_that_ship_with_the_package():
    shown = CliRunner().invoke(main, ["--help"], terminal_width=80)
    assert shown.exit_code == 0, shown.output
    epilog = " ".join(shown.output.split("Commands:")[1].split("\n\n", 1)[1].split())
    assert epilog.startswith("Docs ship with evalsite: 'evalsite docs' lists the pages")
    named = re.findall(r"'evalsite docs (\w[\w/-]*)'", epilog)
    assert named == ["guide", "commands"]
    for page in named:  # each page the epilog names is one `evalsite docs PAGE` finds
        printed = CliRunner().invoke(main, ["docs", page])
        assert printed.exit_code == 0, printed.output
        assert printed.stdout.startswith("# ")
