"""Secret names and encoded secrets (issue 32, low 11): ``api_keys``, ``secrets``, ``passphrase``,
``jwt`` and their kin written into a manifest are refused; a key echoed base64-encoded (standard
or URL-safe, padded or not, at any of the three alignments) or percent-encoded is scrubbed. What
substring scrubbing cannot catch (a reversed, spaced-out or hashed key) is documented, and pinned
here so the documentation stays true."""

from __future__ import annotations

import base64
import hashlib
import json
import math
from urllib.parse import quote, quote_plus

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from runner_support import only_run, openai_arm, questions, write_experiment

from evalsite.runlog.secrets import MASK, looks_secret, scrub, scrub_all, secret_pattern

KEY = "sk-proj-A1b2/C3d4+E5f6=G7h8~i9j0"
ENCODERS = {
    "base64": base64.b64encode,
    "base64 unpadded": lambda data: base64.b64encode(data).rstrip(b"="),
    "urlsafe": base64.urlsafe_b64encode,
    "urlsafe unpadded": lambda data: base64.urlsafe_b64encode(data).rstrip(b"="),
}


@pytest.mark.parametrize("name", ["api_keys", "apiKeys", "secrets", "client_secrets", "passphrase", "ssh_passphrase",
                                  "jwt", "jwt_token", "JWT", "passwords", "db_password", "accessKeys", "private_key",
                                  "refreshToken", "auth_tokens", "cookies", "Bearer-Token", "aws_secret_access_key"])
def test_names_holding_a_secret_are_recognised(name):
    assert looks_secret(name), name


@pytest.mark.parametrize("name", ["max_tokens", "max_new_tokens", "stop_tokens", "keys", "required_keys", "keyword",
                                  "monkey", "passage", "bypass_cache", "secret_name", "api_keys_env", "jwt_file",
                                  "token_budget", "temperature", "compass"])
def test_ordinary_names_are_not_secrets(name):
    assert not looks_secret(name), name


@pytest.mark.parametrize("where, arm_extra, hooks", [
    ("arms[0].params.api_keys", {"params": {"api_keys": [KEY]}}, None),
    ("arms[0].params.secrets", {"params": {"secrets": {"openai": KEY}}}, None),
    ("arms[0].settings.headers.X-Passphrase", {"settings": {"headers": {"X-Passphrase": KEY}}}, None),
    ("arms[0].params.jwt", {"params": {"jwt": KEY}}, None),
    ("hooks.case.pre[0].config.api_keys", {}, {"case": {"pre": [{"builtin": "validate_outputs", "config": {"api_keys": KEY}}]}}),
])
def test_a_manifest_holding_such_a_name_is_refused_before_anything_is_written(runner_project, server, cli, where,
                                                                                arm_extra, hooks):
    arm = openai_arm(server)
    for key, value in arm_extra.items():
        arm[key] = {**arm.get(key, {}), **value}
    manifest = write_experiment(runner_project, questions(1), [arm], **({"hooks": hooks} if hooks else {}))
    result = cli("run", manifest)
    assert result.exit_code == 1
    assert f"{where}: looks like a secret written into the manifest" in result.output, result.output
    assert KEY not in result.output and "Traceback" not in result.output
    assert server.calls == [] and not (runner_project / "runs").exists()


@pytest.mark.parametrize("encoder", ENCODERS)
@pytest.mark.parametrize("before", ["", "u", "us", "user:", "Bearer "])  # the key at offsets 0, 1, 2 (mod 3)
@pytest.mark.parametrize("after", ["", "!", "!!", "&more"])  # and ending a group, or not
def test_a_base64_encoded_key_is_scrubbed_at_every_alignment(encoder, before, after):
    encoded = ENCODERS[encoder](f"{before}{KEY}{after}".encode()).decode()
    scrubbed = scrub(f"token: {encoded} end", secret_pattern([KEY]))
    kept = scrubbed.removeprefix("token: ").removesuffix(" end")
    assert MASK in kept, encoded
    # what stays is the encoding of the bytes around the key (4 characters per 3 bytes, padding),
    # plus at most one character on each side that mixes their bits with the key's
    around = 4 * math.ceil(len(before) / 3) + 4 * math.ceil(len(after) / 3)
    assert len(kept.replace(MASK, "")) <= around + 2, (encoded, scrubbed)


@pytest.mark.parametrize("encoded", [quote(KEY, safe=""), quote_plus(KEY, safe=""), quote(KEY, safe="").lower(),
                                     quote(KEY[:20], safe="")])
def test_a_percent_encoded_key_is_scrubbed(encoded):
    assert scrub(f"?key={encoded}&x=1", secret_pattern([KEY])) == f"?key={MASK}&x=1"


@pytest.mark.parametrize("form", [KEY[::-1], " ".join(KEY), hashlib.sha256(KEY.encode()).hexdigest(), KEY[:7]])
def test_what_substring_scrubbing_does_not_catch(form):
    """Documented in docs/security.md: a reversed, spaced-out or hashed key, or fewer than 8 of its
    characters, are not found."""
    assert scrub(form, secret_pattern([KEY])) == form


def test_a_provider_echoing_the_key_encoded_is_scrubbed_from_the_run(runner_project, server, cli, monkeypatch):
    monkeypatch.setenv("ENCODED_KEY", KEY)
    basic = base64.b64encode(f"user:{KEY}".encode()).decode()
    server.script = {"question 0": [{"reply": f"Authorization: Basic {basic}"}],
                     "question 1": [{"reply": f"https://h/?k={quote(KEY, safe='')}"}]}
    arm = openai_arm(server, settings={"api_key_env": "ENCODED_KEY"})
    cli("run", write_experiment(runner_project, questions(2), [arm]), "--cache", "auto")
    outputs = {case.item_id: case.raw["output"] for case in only_run(runner_project).cases}
    assert outputs["q1"] == f"https://h/?k={MASK}"
    assert outputs["q0"].startswith("Authorization: Basic ") and MASK in outputs["q0"]
    written = json.dumps([p.read_text() for p in runner_project.rglob("*.json*") if p.is_file()])
    assert basic[8:-4] not in written and quote(KEY, safe="") not in written


KEYS = st.text(st.characters(min_codepoint=33, max_codepoint=0x2FF).filter(lambda c: len(c.lower()) == len(c.upper()) == 1),
               min_size=8, max_size=40)  # letter case is compared character by character (docs/security.md)
AROUND = st.text(st.characters(min_codepoint=32, max_codepoint=0x2FF), max_size=9)


def key_only_characters(before: bytes, key: bytes, encoded: str) -> list[int]:
    """The positions of ``encoded`` (base64 of before + key + after) whose 6 bits all come from the key's bytes."""
    first, end = len(before), len(before) + len(key)
    return [j for j, char in enumerate(encoded) if char != "=" and first <= 6 * j // 8 and (6 * j + 5) // 8 < end]


@settings(max_examples=150, deadline=None)
@given(key=KEYS, before=AROUND, after=AROUND, encoder=st.sampled_from(sorted(ENCODERS)))
def test_fuzz_any_key_base64_encoded_anywhere_is_masked_in_every_character_of_its_own(key, before, after, encoder):
    """Any key, base64-encoded after and before any text: every character that encodes only the
    key's bits is masked (a character mixing its bits with a neighbour's may stay)."""
    encoded = ENCODERS[encoder](f"{before}{key}{after}".encode()).decode()
    spans = secret_pattern([key]).spans(encoded)
    hidden = {j for start, end in spans for j in range(start, end)}
    assert set(key_only_characters(before.encode(), key.encode(), encoded)) <= hidden, (encoded, scrub(encoded, secret_pattern([key])))


@settings(max_examples=150, deadline=None)
@given(key=KEYS, before=AROUND, after=AROUND)
def test_fuzz_any_key_as_is_or_percent_encoded_leaves_no_8_characters_of_it(key, before, after):
    pattern = secret_pattern([key])
    for form in (key, key.upper(), key.lower(), quote(key, safe=""), quote_plus(key, safe="")):
        kept = scrub(f"{before}{form}{after}", pattern).lower()
        assert not any(form.lower()[i:i + 8] in kept for i in range(len(form) - 7)), (form, kept)


def test_a_tuple_a_target_returns_is_scrubbed_too():
    assert scrub_all({"output": (KEY, 1)}, secret_pattern([KEY])) == {"output": [MASK, 1]}
