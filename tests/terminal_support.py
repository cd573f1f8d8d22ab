"""Running ``evalsite`` on a pseudo-terminal, as a user's shell would, to see what it draws."""

from __future__ import annotations

import fcntl
import os
import pty
import struct
import subprocess
import sys
import termios
from pathlib import Path


def in_terminal(cwd: Path, *args: str, columns: int = 200, env: dict | None = None, stdout: bool = True) -> str:
    """``evalsite ARGS`` with stderr (and, with ``stdout``, stdout) on a pseudo-terminal of
    ``columns`` columns, ``NO_COLOR`` unset unless ``env`` sets it (a None in ``env`` unsets
    that variable: ``{"COLUMNS": None}`` leaves only the terminal's size); everything it drew."""
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, columns, 0, 0))
    environment = {key: value for key, value in os.environ.items() if key != "NO_COLOR"}
    environment.update({"COLUMNS": str(columns), **(env or {})})
    environment = {key: value for key, value in environment.items() if value is not None}
    process = subprocess.Popen([sys.executable, "-m", "evalsite", *args], cwd=cwd, stdin=subprocess.DEVNULL,
                               stdout=follower if stdout else subprocess.DEVNULL, stderr=follower, env=environment)
    os.close(follower)
    chunks = []
    while True:
        try:
            data = os.read(leader, 65536)
        except OSError:  # the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    process.wait(timeout=120)
    os.close(leader)
    return b"".join(chunks).decode("utf-8", "replace")
