"""The ``evalsite`` command line: click commands only, one module per area, no logic here.

Every module in this package that defines ``COMMANDS`` contributes its commands; adding a
command is adding a module, with no list to keep in step.
"""

from __future__ import annotations

import importlib
import pkgutil

import click

from evalsite import __version__


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="evalsite")
def main() -> None:
    """Run experiments into append-only run logs, test them honestly, publish a static site."""


def _register_commands() -> None:
    for module_info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        module = importlib.import_module(f"{__name__}.{module_info.name}")
        for command in getattr(module, "COMMANDS", ()):
            main.add_command(command)


_register_commands()
