"""Credentials written in a URL (issue 32, medium 6): ``base_url: http://user:PASS@host/…?api_key=…``
reaches the provider as written, but no run header (``config``, ``submitted_manifest``, the
fingerprint; written by ``run``, ``rescore``, ``merge`` or ``import``), error message, case or
site page holds the password or the key; a rotated password is the same config, a changed host
is not."""

from __future__ import annotations

import base64
import json

import pytest
from import_support import PROMPTFOO
from runner_support import all_runs, openai_arm, questions, write_experiment

from evalsite.calls.targets.http import JsonClient
from evalsite.experiment.manifest import load_manifest
from evalsite.experiment.plan import build_plan
from evalsite.project import find_project
from evalsite.runlog.secrets import redact_urls, url_secrets
from evalsite.runlog.store import CASES_FILE, END_FILE, RUN_FILE

PASSWORD = "PassW0rd-9876-xyz"
QUERY_KEY = "QuerySecret-5555-abc"
SECRETS = (PASSWORD, QUERY_KEY)


def credentialed(server, password: str = PASSWORD, host: str = "127.0.0.1") -> str:
    return f"http://alice:{password}@{host}:{server.port}/v1?api_key={QUERY_KEY}&region=eu"


def files_holding(root, secret: str) -> list[str]:
    """Every file outside ``experiments/`` (where the user wrote the secret) whose bytes hold it."""
    return sorted(str(p.relative_to(root)) for p in root.rglob("*")
                  if p.is_file() and "experiments" not in p.parts and secret.encode() in p.read_bytes())


def write_credentialed(project, server, **manifest) -> str:
    return write_experiment(project, questions(2), [openai_arm(server, settings={"base_url": credentialed(server)})],
                            **manifest)


def test_the_request_uses_the_real_url_and_nothing_written_holds_its_credentials(runner_project, server, cli):
    manifest = write_credentialed(runner_project, server)
    server.script = {"question 1": [{"status": 400, "message": f"no such deployment {credentialed(server)}"}]}
    result = cli("run", manifest, "--build")
    assert result.exit_code in (0, 1), result.output
    first = server.calls[0]
    assert first.path == f"/v1/chat/completions?api_key={QUERY_KEY}&region=eu"  # the path joined, the query kept
    assert first.headers["authorization"] == "Basic " + base64.b64encode(f"alice:{PASSWORD}".encode()).decode()
    (run,) = all_runs(runner_project)
    header = run.header.raw
    shown = f"http://127.0.0.1:{server.port}/v1?api_key=%3Credacted%3E&region=eu"
    assert header["config"]["settings"]["base_url"] == shown
    assert header["fingerprint"]["config"]["settings"]["base_url"] == shown
    assert f"base_url: {shown}" in header["submitted_manifest"]
    error = next(case.raw["error"] for case in run.cases if case.item_id == "q1")
    assert "no such deployment http://127.0.0.1" in error and "%3Credacted%3E" in error
    assert (runner_project / "site" / "index.html").is_file()
    for secret in SECRETS:
        assert secret not in result.output
        assert files_holding(runner_project, secret) == [], secret


def test_a_rotated_password_is_the_same_config_and_a_changed_host_is_not(runner_project, server):
    def config_id(url: str) -> str:
        arm = openai_arm(server, settings={"base_url": url})
        path = write_experiment(runner_project, questions(1), [arm])
        (config,) = build_plan(find_project(runner_project), load_manifest(runner_project / path)).configs
        return config.config_id

    first = config_id(credentialed(server))
    assert config_id(credentialed(server, password="another-password-42")) == first
    assert config_id(credentialed(server, host="localhost")) != first
    assert config_id(credentialed(server).replace("region=eu", "region=us")) != first


def test_a_run_resumes_after_its_password_was_rotated(runner_project, server, cli):
    """The rotated password is used for what is left; a changed host would be another config."""
    manifest = write_credentialed(runner_project, server)
    assert cli("run", manifest).exit_code == 0
    (run,) = all_runs(runner_project)
    lines = (run.directory / CASES_FILE).read_text().splitlines(keepends=True)
    (run.directory / CASES_FILE).write_text(lines[0])
    (run.directory / END_FILE).unlink()
    path = runner_project / manifest
    path.write_text(path.read_text().replace(PASSWORD, "rotated-password-42"))
    calls = len(server.calls)
    result = cli("run", manifest, "--resume", run.run_id)
    assert result.exit_code == 0, result.output
    assert len(server.calls) == calls + 1
    assert server.calls[-1].headers["authorization"] == "Basic " + base64.b64encode(b"alice:rotated-password-42").decode()
    assert len(all_runs(runner_project)[0].cases) == 2
    path.write_text(path.read_text().replace("127.0.0.1", "localhost"))
    (run.directory / END_FILE).unlink()
    refused = cli("run", manifest, "--resume", run.run_id)
    assert refused.exit_code == 1 and "Traceback" not in refused.output


def plant_credentials(run_dir, url_shown: str, url_real: str) -> None:
    """What an older evalsite wrote: the real URL in the header's config and manifest (its
    fingerprint cut the user information out of a URL already)."""
    path = run_dir / RUN_FILE
    header = json.loads(path.read_text())
    header["config"]["settings"]["base_url"] = url_real
    header["submitted_manifest"] = header["submitted_manifest"].replace(url_shown, url_real)
    path.write_text(json.dumps(header))


def test_rescore_and_merge_write_no_credential_from_an_older_header(runner_project, server, cli):
    manifest = write_credentialed(runner_project, server)
    for shard in ("1/2", "2/2"):
        result = cli("run", manifest, "--shard", shard)
        assert result.exit_code == 0, result.output
    shown = f"http://127.0.0.1:{server.port}/v1?api_key=%3Credacted%3E&region=eu"
    for run in all_runs(runner_project):
        plant_credentials(run.directory, shown, credentialed(server))
        assert PASSWORD in (run.directory / RUN_FILE).read_text()
    assert cli("merge").exit_code == 0, "merged"
    (merged,) = [run for run in all_runs(runner_project) if run.header.raw.get("merged_from")]
    assert cli("rescore", merged.run_id).exit_code == 0
    written = [run for run in all_runs(runner_project) if run.header.raw.get("merged_from")]
    assert len(written) == 2  # the merged run and its rescore
    for run in written:
        text = (run.directory / RUN_FILE).read_text()
        assert PASSWORD not in text and QUERY_KEY not in text and shown in text


def test_an_import_writes_no_credential_of_its_source(import_project, cli):
    """promptfoo records each provider's config, its base URL included, as the user wrote it."""
    text = (PROMPTFOO / "results.json").read_text()
    planted = text.replace('"apiBaseUrl": "http://127.0.0.1:18961/v1"',
                           f'"apiBaseUrl": "http://bob:{PASSWORD}@127.0.0.1:18961/v1?token={QUERY_KEY}"')
    assert planted != text
    source = import_project / "results.json"
    source.write_text(planted)
    result = cli("import", "promptfoo", str(source))
    assert result.exit_code == 0, result.output
    headers = [json.loads(path.read_text()) for path in import_project.rglob(RUN_FILE)]
    assert len(headers) == 2
    for header in headers:
        assert header["config"]["provider"]["config"]["apiBaseUrl"] == "http://127.0.0.1:18961/v1?token=%3Credacted%3E"
        assert PASSWORD not in json.dumps(header) and QUERY_KEY not in json.dumps(header)


def test_a_connection_error_quoting_the_url_names_it_without_its_credentials(runner_project, server, cli):
    """httpx names the URL it refuses; a short password (not scrubbed as a key would be) is cut out too."""
    arm = openai_arm(server, settings={"base_url": f"ftp://alice:pw7@files.example/v1?api_key={QUERY_KEY}"})
    cli("run", write_experiment(runner_project, questions(1), [arm], schedule={"max_attempts": 1}))
    (run,) = all_runs(runner_project)
    (case,) = run.cases
    assert "UnsupportedProtocol: ftp://files.example/v1/chat/completions?api_key=%3Credacted%3E" in case.raw["error"]
    assert files_holding(runner_project, "pw7@") == [] and files_holding(runner_project, QUERY_KEY) == []


def test_a_client_error_quoting_the_url_is_redacted():
    client = JsonClient(f"http://alice:{PASSWORD}@127.0.0.1:1/v1?api_key={QUERY_KEY}", {}, [], 1)
    message = client.redact(f"cannot reach http://alice:{PASSWORD}@127.0.0.1:1/v1?api_key={QUERY_KEY}&x=1")
    assert message == "cannot reach http://127.0.0.1:1/v1?api_key=%3Credacted%3E&x=1"


@pytest.mark.parametrize("text, redacted", [
    ("base_url: http://user:pw@host:8080/v1?key=k1&region=eu#top", "base_url: http://host:8080/v1?key=%3Credacted%3E&region=eu#top"),
    ("{base_url: http://h/v1?api_key=abc, other: 1}", "{base_url: http://h/v1?api_key=%3Credacted%3E, other: 1}"),
    ("clone https://TOKEN123@github.com/a/b.git.", "clone https://github.com/a/b.git."),
    ("https://acct.blob.core.windows.net/c?sv=2020&sig=Abc%2Bdef%3D&se=1",
     "https://acct.blob.core.windows.net/c?sv=2020&sig=%3Credacted%3E&se=1"),
    ("https://h/cb#access_token=t0k&state=1", "https://h/cb#access_token=%3Credacted%3E&state=1"),
    ("https://h/?X-Amz-Signature=s&X-Amz-Credential=c&password=p&secret=s2&access_token=a&sort=asc",
     "https://h/?X-Amz-Signature=%3Credacted%3E&X-Amz-Credential=%3Credacted%3E&password=%3Credacted%3E"
     "&secret=%3Credacted%3E&access_token=%3Credacted%3E&sort=asc"),
    ("git@github.com:a/b.git and http://h/?token= and http://h/?key_id=7", "git@github.com:a/b.git and http://h/?token= and http://h/?key_id=7"),
])
def test_redact_urls_cuts_credentials_and_keeps_every_other_byte(text, redacted):
    assert redact_urls(text) == redacted


def test_url_secrets_are_what_redaction_takes_out():
    assert url_secrets("http://u:p%40ss@h/?key=a%2Bb&region=eu, x") == ["p@ss", "a+b"]
    assert url_secrets("https://TOKEN123@github.com/a") == ["TOKEN123"]
