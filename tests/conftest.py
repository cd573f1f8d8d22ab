"""Every fixture shared by more than one test file, one name per concept.

Test files take these by name and never import them. Plain helpers (builders, writers, readers)
live in the ``*_support.py`` / ``*_project.py`` modules next to this file and are imported
normally. A fixture local to one test file stays in that file under a name not used here.
"""

from __future__ import annotations

import shutil
import socket
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from browser_support import NO_BROWSER, chromium
from cli_support import Cli
from compare_support import ARM_SOURCE, golden_rows, write_dataset
from evaluator_support import PROJECT_MODULES
from example_support import copy_example, forget_project_modules, run_example
from fakeserver import FakeServer
from hostile_support import make_project
from hypothesis import HealthCheck, settings
from study_support import STEPS, TARGET

# Tests never assert wall-clock times, and hypothesis's per-example deadline (200 ms by default) is
# one: an example that first imports a client library, on a loaded 2-core machine, failed it once.
# So is its too_slow health check (examples generated in more than ~1 s of wall): a test that
# names its own suppressed checks lists it too (a list of its own replaces this one).
settings.register_profile("evalsite", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("evalsite")

PROXY_VARIABLES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY")


@pytest.fixture(autouse=True)
def no_proxy_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test reaches 127.0.0.1 directly: the proxy variables of the machine running the suite
    are cleared (HTTP targets read them), so no test's calls go to a real proxy."""
    for name in PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)


@pytest.fixture(autouse=True)
def no_runs_location(monkeypatch: pytest.MonkeyPatch) -> None:
    """Runs are read from each test's own project: ``--runs`` sets ``EVALSITE_RUNS`` in the process
    that runs the command (a test's, through ``cli``), so it is cleared and put back around every test
    (one test's --runs once leaked into every later test of its worker). ``setenv`` first: ``delenv``
    of an unset variable records nothing to put back."""
    monkeypatch.setenv("EVALSITE_RUNS", "")
    monkeypatch.delenv("EVALSITE_RUNS")


@pytest.fixture(autouse=True)
def no_terminal_width(monkeypatch: pytest.MonkeyPatch) -> None:
    """Output is tested as a pipe gets it: pytest-xdist's workers inherit ``COLUMNS=80``, which
    would make every command fit its text to 80 columns (docs/reference/commands/output.md#width)."""
    monkeypatch.delenv("COLUMNS", raising=False)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """One line for the browser tests skipped because Chromium is missing, instead of silent skips."""
    skipped = [report for report in terminalreporter.stats.get("skipped", []) if NO_BROWSER in str(report.longrepr)]
    if skipped:
        terminalreporter.write_line(f"{len(skipped)} browser tests skipped: {NO_BROWSER}", yellow=True, bold=True)


# The CLI -------------------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def cli() -> Cli:
    """The one CLI invoker: ``cli("run", ...)`` returns click's Result; ``cli.json(...)`` the parsed
    ``--json`` output of a command that must succeed. Exceptions escape (a traceback fails the test)."""
    return Cli()


# The hostile-input project -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def hostile_pristine(cli: Cli, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The two-arm project (``hostile_support.make_project``) run once per module; tests use copies of it."""
    return make_project(cli, tmp_path_factory.mktemp("hostile") / "p")


@pytest.fixture
def hostile_project(hostile_pristine: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private copy of ``hostile_pristine`` (two good runs) as the working folder, for the test to damage."""
    copy = tmp_path / "p"
    shutil.copytree(hostile_pristine, copy)
    monkeypatch.chdir(copy)
    return copy


# The bundled example project -----------------------------------------------------------------------


@pytest.fixture
def example_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A fresh copy of the example project (data, arms, experiments), not yet run, as the working folder."""
    copy_example(tmp_path)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))
    forget_project_modules()
    yield tmp_path
    forget_project_modules()


@pytest.fixture(scope="module")
def example_runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example project run once per test module (3 arms × 60 items × 3 repeats); read it, do not
    change it (``example_with_runs`` is a private copy)."""
    return run_example(tmp_path_factory.mktemp("example"))


@pytest.fixture
def example_with_runs(example_runs: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A private copy of the example project with its three completed runs, as the working folder."""
    copy = tmp_path / "project"
    shutil.copytree(example_runs, copy, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.chdir(copy)
    monkeypatch.setattr(sys, "path", list(sys.path))
    forget_project_modules()
    yield copy
    forget_project_modules()


# Scratch projects, one per area --------------------------------------------------------------------


@pytest.fixture
def runner_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty project (``data/`` and ``experiments/``) as the working folder, for runner and target
    tests (``runner_support.write_experiment`` writes a dataset and a manifest into it)."""
    (tmp_path / "data").mkdir()
    (tmp_path / "experiments").mkdir()
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.fixture
def server() -> Iterator[FakeServer]:
    """The fake OpenAI/Anthropic provider (``tests/fakeserver.py``) on 127.0.0.1, for one test."""
    with FakeServer() as running:
        yield running


@pytest.fixture
def golden_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The comparison project as the working folder: twelve golden questions (``g03`` critical) and
    the offline ``golden_arm`` whose wrong answers each test chooses (``compare_support.run_arm``)."""
    for folder in ("data", "experiments"):
        (tmp_path / folder).mkdir()
    write_dataset(tmp_path, golden_rows())
    (tmp_path / "golden_arm.py").write_text(ARM_SOURCE)
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.fixture
def evaluator_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """An empty folder as the working folder for the evaluator and rescore tests
    (``evaluator_support.make_project`` writes the support project into it); its modules import afresh."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [*sys.path])
    for name in PROJECT_MODULES:
        monkeypatch.delitem(sys.modules, name, raising=False)
    yield tmp_path
    for name in PROJECT_MODULES:
        sys.modules.pop(name, None)


@pytest.fixture
def import_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty project (just ``data/``) as the working folder, for ``evalsite import``."""
    (tmp_path / "data").mkdir()
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.fixture
def study_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The study pipeline's project as the working folder: the ``study_target`` python target and the
    ``study_steps`` steps on disk (``study_support.write_study`` writes the manifest)."""
    (tmp_path / "data").mkdir()
    (tmp_path / "experiments").mkdir()
    (tmp_path / "study_target.py").write_text(TARGET)
    (tmp_path / "study_steps.py").write_text(STEPS)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))
    forget_project_modules("study_")
    yield tmp_path
    forget_project_modules("study_")


# The browser -------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def browser() -> Iterator:
    """Headless Chromium (selenium) for one test module; mark the module ``browser_support.needs_browser``."""
    with chromium() as driver:
        yield driver


@pytest.fixture
def s3(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A moto S3 server on 127.0.0.1 and a bucket (``s3://bucket/team``), with the environment
    pointing at it; skipped without the s3 extra or moto[server]."""
    pytest.importorskip("s3fs", reason="the S3 store needs the optional extra: pip install 'evalsite[s3]'")
    moto_server = pytest.importorskip("moto.server", reason="the local S3 server needs moto[server] (test extra)")
    pytest.importorskip("flask", reason="moto's server mode needs moto[server] (flask)")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    for name, value in {"AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test", "AWS_DEFAULT_REGION": "us-east-1",
                        "AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}"}.items():
        monkeypatch.setenv(name, value)
    import s3fs

    s3fs.S3FileSystem.clear_instance_cache()
    bucket = f"evals-{uuid.uuid4().hex[:8]}"  # moto keeps buckets in-process across servers
    s3fs.S3FileSystem().mkdir(bucket)
    yield f"s3://{bucket}/team"
    server.stop()
