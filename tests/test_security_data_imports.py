"""Issue 32, Low 9 and Low 10: import sources that used to crash or lose rows silently.

- a CSV whose quote is never closed: the quoted field swallowed every row after it (one case
  imported instead of four); it is now refused naming the line where the record starts;
- JSON nested 100,000 levels deep, in every JSON format: ``RecursionError`` tracebacks; now a
  one-line refusal naming the file (and the line where the reader knows it).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from bombs_support import write_zip
from import_support import imported_runs

from evalsite.execute.importers.evalzip import ZSTD_METHOD

DEEP = "[" * 100_000 + "]" * 100_000
TOO_DEEP = "nested too deeply to read (arrays or objects about 1,000 levels inside each other)"


def test_an_unclosed_quote_is_refused_naming_the_line_it_opens_on(import_project, cli):
    path = import_project / "results.csv"
    path.write_text('id,input,score\nq0,fine,1\nq1,"never closed,1\nq2,swallowed,0\nq3,swallowed too,1\n')
    result = cli("import", "csv", str(path))
    assert (result.exit_code, result.output) == (1, (
        f"Error: {path}: invalid CSV in the record starting on line 3: a quoted field is never closed "
        "(its opening quote swallows every line after it)\n"))
    assert not (import_project / "runs").exists()


def test_a_stray_quote_is_refused_and_quoted_line_breaks_still_import(import_project, cli):
    path = import_project / "results.csv"
    path.write_text('id,input,score\nq0,"two\nlines",1\nq1,"a"b,0\n')
    result = cli("import", "csv", str(path))
    assert result.exit_code == 1
    assert result.output.startswith(f"Error: {path}: invalid CSV in the record starting on line 4: ',' expected after '\"'")
    path.write_text('id,input,score\nq0,"two\nlines",1\nq1,"say ""hi""",0\nq2,plain,1\n')
    assert cli("import", "csv", str(path)).exit_code == 0
    (run,) = imported_runs(import_project)
    assert [case["input"] for case in run.cases] == ["two\nlines", 'say "hi"', "plain"]


def _deep_sources(folder: Path) -> list[tuple[str, Path, str]]:
    """(format, file, where the refusal points) for a 100k-deep value in each JSON format."""
    def write(name: str, text: str) -> Path:
        (folder / name).write_text(text)
        return folder / name

    eval_log = write_zip(folder / "deep.eval", [
        _zstd("header.json", b'{"version": 2, "status": "success", "eval": {"task": "t", "model": "m"}}'),
        _zstd("samples/1_epoch_1.json", ('{"id": 1, "input": ' + DEEP + "}").encode()),
    ])
    return [
        ("jsonl", write("deep.jsonl", '{"id": "a", "input": "x", "score": 1}\n{"id": "b", "input": ' + DEEP + "}\n"),
         "line 2: "),
        ("promptfoo", write("deep.json", '{"results": {"results": [' + DEEP + "]}}"), "line 1: "),
        ("inspect", write("deep-inspect.json", '{"version": 2, "samples": [{"id": 1, "input": ' + DEEP + "}]}"),
         "line 1: "),
        ("inspect", eval_log, "member samples/1_epoch_1.json is "),
        ("lm-eval", write("results_deep.json", '{"results": ' + DEEP + "}"), ""),
    ]


def _zstd(name: str, data: bytes) -> tuple[str, int, bytes, int, int]:
    import zlib

    import zstandard

    return name, ZSTD_METHOD, zstandard.ZstdCompressor().compress(data), len(data), zlib.crc32(data)


@pytest.mark.parametrize("index", range(5))
def test_json_nested_100k_deep_is_refused_naming_the_file(import_project, cli, index):
    format_name, path, where = _deep_sources(import_project)[index]
    result = cli("import", format_name, str(path))
    assert (result.exit_code, result.output) == (1, f"Error: {path}: {where}{TOO_DEEP}\n")
    assert not (import_project / "runs").exists()


def test_an_lm_eval_prompt_too_deep_for_chat_messages_stays_text():
    from evalsite.execute.importers.lmeval import _sent  # where lm-eval's JSON-encoded prompt is parsed

    assert _sent({"gen_args_0": {"arg_0": DEEP}}) == DEEP
    messages = [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}]
    assert _sent({"gen_args_0": {"arg_0": json.dumps(messages)}}) == messages
