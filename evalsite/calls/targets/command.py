"""The ``command`` target: one subprocess per case, JSON on stdin, the answer on stdout.

The process reads ``{"input", "row", "params", "repeat", "item_id"}`` as one JSON document on
stdin (with ``checkpoint``, ``{id, path}``, on a checkpoint axis, also in the environment as
``EVALSITE_CHECKPOINT_ID`` and ``EVALSITE_CHECKPOINT_PATH``) and prints its answer. A JSON object of result keys holding ``output`` (and optionally
``input_tokens``, ``output_tokens``, ``cost_usd``, ``finish_reason``) is read as a result; any
other stdout is the output text (one trailing newline removed). A non-zero exit is the case's
error, carrying the last lines of stderr. The runner's per-call timeout kills the process.

Spec: ``command:<command line>`` or ``command`` with ``settings.command`` (a string or an argv
list). Settings: ``command``, ``cwd`` (relative to the project root), ``env`` (extra variables;
the process inherits the environment, so secrets need no mention here).
"""

from __future__ import annotations

import asyncio
import json
import os
import shlex
import shutil
from pathlib import Path

from evalsite.calls.targets.base import (
    RESULT_KEYS,
    TargetRequest,
    TargetResult,
    check_settings,
    refuse_secret_names,
    register_target,
    result_from_value,
)
from evalsite.errors import TargetError
from evalsite.jsonshape import JSONObject

STDERR_LINES = 5


class Command:
    kind = "command"

    def __init__(self, argv: list[str], cwd: Path, env: dict[str, str]):
        self.argv = argv
        self.cwd = cwd
        self.env = env

    async def generate(self, request: TargetRequest) -> TargetResult:
        payload = {
            "input": request.input,
            "row": request.row,
            "params": request.params,
            "repeat": request.repeat,
            "item_id": request.item_id,
        }
        env = self.env
        if request.checkpoint is not None:  # a checkpoint axis: in the JSON and the environment
            payload["checkpoint"] = request.checkpoint
            env = {**env, "EVALSITE_CHECKPOINT_ID": request.checkpoint["id"],
                   "EVALSITE_CHECKPOINT_PATH": request.checkpoint["path"] or ""}
        process = await asyncio.create_subprocess_exec(
            *self.argv,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            cwd=self.cwd,
            env=env,
            start_new_session=True,  # a Ctrl-C at the terminal cancels the run, not the cases in flight
        )
        try:
            stdout, stderr = await process.communicate(json.dumps(payload, default=str).encode("utf-8"))
        except BaseException:  # timed out or canceled: the process must not outlive its case
            if process.returncode is None:
                process.kill()
                await process.wait()
            raise
        returncode = await process.wait()  # at once: communicate() saw the process end
        if returncode != 0:
            return TargetResult(error=exit_error(returncode, stderr))
        return parse_stdout(stdout.decode("utf-8", errors="replace"))

    async def aclose(self) -> None:
        return None


def exit_error(returncode: int, stderr: bytes) -> str:
    how = f"killed by signal {-returncode}" if returncode < 0 else f"exit status {returncode}"
    tail = stderr.decode("utf-8", errors="replace").strip().splitlines()[-STDERR_LINES:]
    return f"{how}: {' | '.join(tail)}" if tail else how


def parse_stdout(text: str) -> TargetResult:
    try:
        value = json.loads(text)
    except ValueError:
        value = None
    if isinstance(value, dict) and "output" in value and set(value) <= set(RESULT_KEYS):
        return result_from_value(value)
    return TargetResult(output=text[:-1] if text.endswith("\n") else text)


def command_argv(rest: str, settings: JSONObject) -> list[str]:
    command = rest or settings.get("command")
    if isinstance(command, str) and command.strip():
        return shlex.split(command)
    if isinstance(command, list) and command and all(isinstance(part, str) for part in command):
        return list(command)
    raise TargetError("target command: give the command as 'command:<command line>' or in settings.command")


def resolve_program(program: str, cwd: Path) -> str:
    """The executable's path: on PATH, or relative to the working folder."""
    found = shutil.which(program) if os.sep not in program else None
    if found:
        return found
    candidate = cwd / program
    if candidate.is_file() and os.access(candidate, os.X_OK):
        return str(candidate)
    raise TargetError(f"target command: program {program!r} not found on PATH or in {cwd}")


@register_target("command")
def _make(rest: str, settings: JSONObject, project_root: Path) -> Command:
    check_settings("command", settings, {"command", "cwd", "env"})
    argv = command_argv(rest, settings)
    cwd = (project_root / settings.get("cwd", ".")).resolve()
    if not cwd.is_dir():
        raise TargetError(f"settings.cwd: {settings.get('cwd')!r} is not a folder under {project_root}")
    extra = settings.get("env") or {}
    if not isinstance(extra, dict) or not all(isinstance(v, str) for v in extra.values()):
        raise TargetError("settings.env: needs a mapping of variable names to strings (target command)")
    refuse_secret_names(extra, "env", "leave it out: the process inherits the environment")
    return Command([resolve_program(argv[0], cwd), *argv[1:]], cwd, {**os.environ, **extra})
