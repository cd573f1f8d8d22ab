"""The one way tests run the evalsite CLI: in-process through click's CliRunner (the ``cli`` fixture)."""

from __future__ import annotations

import json
from typing import Any

from click.testing import CliRunner, Result

from evalsite.cli import main


class Cli:
    """``cli(*args)`` runs one evalsite command and returns click's ``Result`` (``exit_code``,
    ``output``, ``stdout``, ``stderr``). Exceptions are not caught: a command that escapes with a
    traceback fails the test, as a user would see it."""

    def __init__(self) -> None:
        self._runner = CliRunner()

    def __call__(self, *args: str, **kwargs: Any) -> Result:
        return self._runner.invoke(main, list(args), catch_exceptions=False, **kwargs)

    def json(self, *args: str) -> Any:
        """The parsed ``--json`` output of a command that must succeed (exit 0)."""
        result = self(*args, "--json")
        assert result.exit_code == 0, result.output
        return json.loads(result.stdout)
