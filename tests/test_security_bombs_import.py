"""Issue 32, Medium 7: an Inspect ``.eval`` log whose members are zip bombs.

Each log here is a real ZIP holding a real bomb, a few kilobytes that decode to gigabytes: a
member that honestly declares 2 GB, and a member that declares a few bytes and holds 2 GB. Both
used to end in a MemoryError; now each is a one-line refusal naming the file and the member, and
the import holds at most what the member declares (never more than the limit). The limits are
small in most tests and the default in two, which stop long before any real memory is used.
"""

from __future__ import annotations

import json
import zlib
from pathlib import Path

import pytest
import zstandard
from bombs_support import GIB, MIB, deflate_zeros, peak_of, write_zip, zstd_zeros
from import_support import INSPECT_EVAL, imported_runs

from evalsite.errors import SourceError
from evalsite.execute.importers import ImportOptions, import_files
from evalsite.execute.importers.evalzip import DEFAULT_MAX_MEMBER_BYTES, ZSTD_METHOD, EvalZip
from evalsite.project import find_project

DEFLATE_METHOD = 8
HEADER = {"version": 2, "status": "success", "eval": {"task": "t", "model": "m"}}
SAMPLE = "samples/1_epoch_1.json"


def honest(name: str, data: bytes) -> tuple[str, int, bytes, int, int]:
    return name, ZSTD_METHOD, zstandard.ZstdCompressor().compress(data), len(data), zlib.crc32(data)


def log_with(path: Path, member: tuple[str, int, bytes, int, int]) -> Path:
    return write_zip(path, [honest("header.json", json.dumps(HEADER).encode()), member])


@pytest.mark.parametrize("method, bomb", [(ZSTD_METHOD, zstd_zeros), (DEFLATE_METHOD, deflate_zeros)])
def test_a_member_declaring_2_gb_is_refused_at_the_default_limit(import_project, cli, method, bomb):
    data = bomb(2 * GIB)
    assert len(data) < 2 * MIB  # small compressed, huge decompressed
    path = log_with(import_project / "bomb.eval", (SAMPLE, method, data, 2 * GIB, 0))
    result = cli("import", "inspect", str(path))
    assert result.exit_code == 1
    assert result.output == (f"Error: {path}: member {SAMPLE} declares 2,147,483,648 bytes decompressed, over the "
                             f"limit of {DEFAULT_MAX_MEMBER_BYTES:,} (evalsite import --max-member-mb raises it)\n")
    assert not (import_project / "runs").exists()


@pytest.mark.parametrize("method, bomb", [(ZSTD_METHOD, zstd_zeros), (DEFLATE_METHOD, deflate_zeros)])
def test_a_member_lying_about_its_size_stops_at_the_declared_size(import_project, method, bomb):
    path = log_with(import_project / "liar.eval", (SAMPLE, method, bomb(2 * GIB if method == ZSTD_METHOD else 256 * MIB),
                                                   1000, 0))
    problem: list[str] = []

    def read() -> None:
        with pytest.raises(SourceError) as raised:
            import_files(find_project(), "inspect", [path], ImportOptions())
        problem.append(raised.value.message)

    assert peak_of(read) < 16 * MIB
    expected = ("decompresses to more than the 1,000 bytes it declares (a damaged file or a zip bomb)"
                if method == ZSTD_METHOD else "is unreadable: Bad CRC-32")  # zipfile stops at the declared size
    assert problem[0].startswith(f"{path}: member {SAMPLE} {expected}")
    assert not (import_project / "runs").exists()


def test_the_limit_is_an_option_and_the_running_count_holds_at_it(import_project, cli):
    sample = json.dumps({"id": 1, "epoch": 1, "input": "x" * (3 * MIB), "scores": {"s": {"value": "C"}}}).encode()
    path = log_with(import_project / "big.eval", honest(SAMPLE, sample))
    refused = cli("import", "inspect", str(path), "--max-member-mb", "2")
    assert refused.exit_code == 1
    assert refused.output.startswith(f"Error: {path}: member {SAMPLE} declares {len(sample):,} bytes decompressed, "
                                     f"over the limit of {2 * MIB:,}")
    with EvalZip(path, max_member_bytes=len(sample)) as log:  # at the limit exactly: read whole
        assert log.read(SAMPLE) == sample
    assert cli("import", "inspect", str(path), "--max-member-mb", "4").exit_code == 0
    (run,) = imported_runs(import_project)
    assert len(run.cases) == 1 and run.cases[0]["passed"] is True


def test_an_ordinary_log_imports_under_a_small_limit(import_project):
    """The committed logs written by Inspect itself declare their true sizes: a limit of their
    largest member read (the header or a sample) lets them through, one byte less does not."""
    largest = max(info.file_size for info in _infos(INSPECT_EVAL[0])
                  if info.filename == "header.json" or info.filename.startswith("samples/"))
    options = ImportOptions(max_member_bytes=largest)
    (run,) = import_files(find_project(), "inspect", [INSPECT_EVAL[0]], options).runs
    assert run.summary.cases > 0
    with pytest.raises(SourceError, match="over the limit of"):
        import_files(find_project(), "inspect", [INSPECT_EVAL[0]], ImportOptions(max_member_bytes=largest - 1, again=True))


def _infos(path: Path):
    import zipfile

    with zipfile.ZipFile(path) as archive:
        return archive.infolist()
