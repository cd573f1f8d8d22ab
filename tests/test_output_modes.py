"""Files a command writes (``-o``, ``--junit``) get the mode the umask gives a plain file, so a CI
artifact step running as another user can read them (a temporary file's own mode is 0600)."""

from __future__ import annotations

import os
import stat

import pytest

from evalsite.analysis.ci_files import write_atomic


@pytest.mark.parametrize(("umask", "mode"), [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)])
def test_a_written_file_has_the_umask_s_mode(tmp_path, umask, mode):
    previous = os.umask(umask)
    try:
        write_atomic(tmp_path / "out.json", "{}\n")
        write_atomic(tmp_path / "out.json", "{}\n")  # replacing a file keeps the rule
    finally:
        os.umask(previous)
    assert stat.S_IMODE((tmp_path / "out.json").stat().st_mode) == mode
    assert os.umask(previous) == previous  # the process's umask is left as it was
    os.umask(previous)


def test_leaderboard_dash_o_is_readable_by_others_under_umask_022(example_project, cli):
    cli("run", "experiments/arithmetic.yaml", "--repeat", "1")
    previous = os.umask(0o022)
    try:
        result = cli("leaderboard", "-o", "board.csv")
    finally:
        os.umask(previous)
    assert result.exit_code == 0, result.output
    assert stat.S_IMODE((example_project / "board.csv").stat().st_mode) == 0o644
