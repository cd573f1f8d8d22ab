"""The top-level names are typed for a type checker: ``evalsite.run_experiment`` is the API's
function, not the ``Any`` the lazy ``__getattr__`` alone would give, so its word options are
checked (a typo in ``executor=`` is a type error before anything runs)."""

from __future__ import annotations

from example_support import REPO
from mypy import api

PROBE = """\
import evalsite

reveal_type(evalsite.run_experiment)
reveal_type(evalsite.run_experiment("experiments/arithmetic.yaml").reasons)
evalsite.run_experiment("experiments/arithmetic.yaml", executor="rey")
"""


def test_mypy_sees_the_typed_run_experiment(tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text(PROBE)
    package = REPO / "evalsite"
    # only the root package, the API and the stdlib-only base modules: the rest is skipped (Any), which
    # keeps this to seconds and is enough to tell the function's own signature from Any
    files = [probe, *(package / name for name in ("__init__.py", "api.py", "errors.py", "project.py"))]
    out, err, status = api.run(["--cache-dir", str(tmp_path / "cache"), "--no-error-summary", "--follow-imports=skip",
                                "--hide-error-context", *map(str, files)])
    lines = [line.partition(": ")[2] for line in out.splitlines() if line.startswith(str(probe))]
    revealed, ok, typo = lines
    assert revealed.startswith('note: Revealed type is "def (manifest: str | pathlib.Path, *, project: evalsite.project.Project')
    assert "executor: Literal['local'] | Literal['ray'] | None =" in revealed
    assert revealed.endswith('-> evalsite.api.BatchResult"')
    assert ok == 'note: Revealed type is "tuple[str, ...]"'
    assert typo.startswith('error: Argument "executor" to "run_experiment" has incompatible type "Literal[\'rey\']"')
    assert status == 1, err
