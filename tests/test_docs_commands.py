"""Every command is listed in docs/reference/commands.md, linked to a page that documents it."""

from __future__ import annotations

import re
from pathlib import Path

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
