"""Fingerprints: what a run records about everything its numbers depend on, and nothing secret."""

from __future__ import annotations

import email
from importlib import metadata
from pathlib import Path

import pytest
from compare_support import commit_all, git

from evalsite.runlog.fingerprint import (
    KEY_PACKAGES,
    FieldDiff,
    _stated_version,
    diff_fingerprints,
    environment,
    fingerprint_hash,
    git_identity,
    project_code_files,
)
from evalsite.runlog.secrets import REDACTED, redact_secrets, redact_urls
from evalsite.runlog.store import read_run


def only_run(project: Path):
    (directory,) = sorted((project / "runs").iterdir())
    return read_run(directory)


def test_run_json_carries_every_fingerprint_field_and_its_hash(example_project, cli):
    assert cli("run", "experiments/arithmetic.yaml", "--arm", "sampler", "--repeat", "1", "--allow-failures").exit_code == 0
    header = only_run(example_project).header.raw
    fingerprint = header["fingerprint"]
    assert header["fingerprint_hash"] == fingerprint_hash(fingerprint)
    assert fingerprint["dataset"]["path"] == "data/arithmetic.jsonl"
    assert fingerprint["dataset"]["dataset_id"] == header["dataset"]["dataset_id"]
    assert fingerprint["dataset"]["items"] == 60
    assert fingerprint["config"]["params"] == {"accuracy": 0.67, "seed": 7}
    assert fingerprint["config_id"] == header["config_id"]
    assert len(fingerprint["prompt_hash"]) == 12
    exact = fingerprint["evaluators"]["exact"]
    assert exact["type"] == "exact" and exact["params"] == {"ignore_whitespace": True}
    assert exact["version"] == header["evaluators"]["exact"]["version"]
    assert fingerprint["target"] == {"kind": "python", "model": None}
    assert fingerprint["seed"] == 7
    assert set(fingerprint["code"]) == {"commit", "dirty", "remote", "files", "files_hash"}
    assert set(fingerprint["code"]["files"]) == {"arms/__init__.py", "arms/arithmetic.py"}
    environment = fingerprint["environment"]
    assert set(environment) >= {"evalsite", "python", "os", "arch", "packages"}
    assert environment["packages"]["numpy"]


def test_outside_a_git_checkout_the_build_is_unknown(example_project, cli):
    cli("run", "experiments/arithmetic.yaml", "--arm", "careful", "--repeat", "1")
    code = only_run(example_project).header.fingerprint["code"]
    assert code["commit"] is None and code["dirty"] is None


def test_git_commit_dirty_flag_and_remote_without_credentials(example_project):
    commit_all(example_project)
    git(example_project, "remote", "add", "origin", "https://bot:ghp_s3cret@github.com/acme/evals.git")
    clean = git_identity(example_project)
    assert clean == {
        "commit": git(example_project, "rev-parse", "HEAD"),
        "dirty": False,
        "remote": "https://github.com/acme/evals.git",
    }
    (example_project / "arms" / "arithmetic.py").write_text("# edited\n", encoding="utf-8")
    assert git_identity(example_project)["dirty"] is True


def test_editing_an_imported_project_file_changes_the_code_hash(example_project, cli):
    cli("run", "experiments/arithmetic.yaml", "--arm", "careful", "--repeat", "1")
    first = only_run(example_project)
    arms = example_project / "arms" / "arithmetic.py"
    arms.write_text(arms.read_text() + "\n# a comment changes the bytes\n", encoding="utf-8")
    cli("run", "experiments/arithmetic.yaml", "--arm", "careful", "--repeat", "1")
    second = read_run(next(p for p in (example_project / "runs").iterdir() if p.name != first.run_id))
    changed = {d.path for d in diff_fingerprints(first.header.fingerprint, second.header.fingerprint)}
    assert changed == {"code.files.arms/arithmetic.py", "code.files_hash"}


def test_code_files_follow_imports_through_project_files_only(tmp_path):
    (tmp_path / "pkg" / "sub").mkdir(parents=True)
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "sub" / "__init__.py").write_text("from . import helpers\n")
    (tmp_path / "pkg" / "sub" / "helpers.py").write_text("import json\nfrom ..shared import VALUE\n")
    (tmp_path / "pkg" / "shared.py").write_text("VALUE = 1\n")
    (tmp_path / "pkg" / "entry.py").write_text(
        "import numpy\nfrom evalsite.runlog.hashing import short_hash\n"
        "def run():\n    from pkg.sub import helpers\n"
    )
    (tmp_path / "pkg" / "unused.py").write_text("")
    files = project_code_files(tmp_path, ["pkg.entry"])
    assert sorted(files) == [
        "pkg/__init__.py", "pkg/entry.py", "pkg/shared.py", "pkg/sub/__init__.py", "pkg/sub/helpers.py",
    ]
    assert all(len(digest) == 16 for digest in files.values())


def test_secrets_are_redacted_and_env_var_names_kept():
    settings = {
        "api_key": "sk-live-123",
        "api_key_env": "OPENAI_API_KEY",
        "max_tokens": 256,
        "headers": {"Authorization": "Bearer abc", "X-Api-Key": "k", "Accept": "json"},
        "base_url": "https://user:pw@proxy.example.com/v1?access_token=t0k&region=eu",
        "fallbacks": [{"password": "hunter2"}],
    }
    assert redact_secrets(settings) == {
        "api_key": REDACTED,
        "api_key_env": "OPENAI_API_KEY",
        "max_tokens": 256,
        "headers": {"Authorization": REDACTED, "X-Api-Key": REDACTED, "Accept": "json"},
        "base_url": "https://proxy.example.com/v1?access_token=%3Credacted%3E&region=eu",
        "fallbacks": [{"password": REDACTED}],
    }


def test_a_secret_in_arm_settings_is_refused_and_never_reaches_disk(example_project, cli):
    manifest = example_project / "experiments" / "arithmetic.yaml"
    manifest.write_text(
        manifest.read_text().replace(
            "target: python:arms.arithmetic:careful",
            "target: python:arms.arithmetic:careful\n    settings:\n      api_key: sk-never-on-disk",
        )
    )
    result = cli("run", "experiments/arithmetic.yaml", "--arm", "careful", "--repeat", "1")
    assert result.exit_code == 1 and "api_key" in result.output
    assert "sk-never-on-disk" not in result.output
    written = [p for p in example_project.rglob("*") if p.is_file() and p != manifest]
    assert not any(b"sk-never-on-disk" in p.read_bytes() for p in written)



@pytest.mark.parametrize(
    "url, stripped",
    [
        ("https://x:y@github.com/a/b.git", "https://github.com/a/b.git"),
        ("ssh://git@host/a/b", "ssh://host/a/b"),
        ("git@github.com:a/b.git", "git@github.com:a/b.git"),
        ("https://github.com/a/b", "https://github.com/a/b"),
    ],
)
def test_strip_url_credentials(url, stripped):
    assert redact_urls(url) == stripped


def test_diff_names_every_differing_leaf_by_dotted_path():
    old = {"dataset": {"dataset_id": "d@1"}, "config": {"params": {"model": "a", "t": 0}}, "seed": None, "tags": [1]}
    new = {"dataset": {"dataset_id": "d@1"}, "config": {"params": {"model": "b", "top_p": 1}}, "tags": [1, 2]}
    assert diff_fingerprints(old, new) == [
        FieldDiff("config.params.model", "a", "b"),
        FieldDiff("config.params.t", 0, None),
        FieldDiff("config.params.top_p", None, 1),
        FieldDiff("tags", [1], [1, 2]),
    ]
    assert diff_fingerprints(new, new) == []


def test_inputs_id_is_the_canonical_hash_of_every_item_id_and_input_hash():
    """``inputs_id`` hashes ``[item_id, input_sha]`` per item: written directly for strings, it is
    the canonical JSON's hash exactly (quotes, backslashes, control characters, non-ASCII, U+2028)."""
    from evalsite.runlog.fingerprint import _id_and_input_sha
    from evalsite.runlog.hashing import sha256_json

    ids = ["b0", "", 'a "quoted" id', "back\\slash", "tab\tnew\nline\x00\x1f\x7f", "héllo", "日本", "\u2028\u2029",
           "\U0001f600", "/slash", *(chr(code) for code in range(0, 0x3000, 7))]
    for item_id in ids:
        assert _id_and_input_sha(item_id, "ab" * 32) == sha256_json([item_id, "ab" * 32]), repr(item_id)
    assert _id_and_input_sha(7, "ab") == sha256_json([7, "ab"])  # not a string: the encoder's way


@pytest.mark.parametrize("text", [
    "Metadata-Version: 2.1\nName: scipy\nVersion: 1.17.1\nSummary: x\n\nVersion: 9\n",
    "Metadata-Version: 2.1\nversion:\t 2.0 \nName: a\n", "Name: a\nVERSION:3\n", "Name: a\nVersion: 1.0\n  folded\n",
    "Name: a\r\nVersion: 1.0\r\n", "Name: a\n\nVersion: 1.0\n", "not a field\nVersion: 1.0\n", "Name: a\n folded\nVersion: 2\n",
    "Version: 1\nVersion: 2\n", "Name: a\n", "", "Version:\n", "From x\nVersion: 1\n", ": empty name\nVersion: 4\n",
])
def test_the_stated_version_is_the_email_parsers(text):
    """The Version field read from METADATA's lines is the one importlib.metadata's email parser reads, or None."""
    stated = _stated_version(text)
    assert stated is None or stated == email.message_from_string(text)["Version"]
    assert stated is not None or text in {"Name: a\nVersion: 1.0\n  folded\n", "Name: a\r\nVersion: 1.0\r\n", "Name: a\n\nVersion: 1.0\n",
                                          "not a field\nVersion: 1.0\n", "Name: a\n folded\nVersion: 2\n", "Name: a\n", "",
                                          "From x\nVersion: 1\n"}


def test_the_package_versions_are_importlib_metadatas():
    assert environment()["packages"] == {name: _version_or_none(name) for name in KEY_PACKAGES}


def _version_or_none(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None
