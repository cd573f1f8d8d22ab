"""Everything a number depends on, recorded with every run, and its hash."""

from __future__ import annotations

import platform
import subprocess
import sys
from pathlib import Path

from evalsite import __version__
from evalsite.hashing import sha256_json, short_hash


def git_identity(root: Path) -> dict:
    """The project's git commit and dirty flag, or ``None`` values outside a checkout."""
    def git(*args: str) -> str | None:
        try:
            done = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            return None
        return done.stdout.strip() if done.returncode == 0 else None

    commit = git("rev-parse", "HEAD")
    status = git("status", "--porcelain", "--untracked-files=no") if commit else None
    return {"commit": commit, "dirty": None if status is None else bool(status)}


def environment() -> dict:
    return {
        "evalsite": __version__,
        "python": platform.python_version(),
        "os": platform.system(),
        "arch": platform.machine(),
        "implementation": sys.implementation.name,
    }


def build_fingerprint(*, dataset: dict, config: dict, config_id: str, prompt, evaluators: dict, code: dict) -> dict:
    return {
        "dataset": dataset,
        "config": config,
        "config_id": config_id,
        "prompt_hash": short_hash(prompt),
        "evaluators": evaluators,
        "code": code,
        "environment": environment(),
    }


def fingerprint_hash(fingerprint: dict) -> str:
    return sha256_json(fingerprint)[:16]
