"""``python -m evalsite`` runs the command line."""

from evalsite.cli import main

main()
