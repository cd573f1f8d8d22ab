"""aiohttp as evalsite imports it (evalsite.calls.targets.aiohttp_import): its unverifying default
context loads no CA bundle, and both its default contexts still do what aiohttp makes them for.
Each probe is a fresh interpreter, so aiohttp is first imported there by evalsite."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from fakeserver import FakeServer
from proxy_support import https_certificates

PROBE = """
import asyncio, json, ssl, sys
import evalsite.calls.targets.http  # imports aiohttp
import aiohttp, aiohttp.connector as connector

async def status(verify):
    async with aiohttp.ClientSession() as session:
        try:
            async with session.post(sys.argv[1], json={"model": "m", "messages": []}, ssl=verify) as reply:
                return reply.status
        except aiohttp.ClientConnectorCertificateError:
            return "certificate refused"

verified, unverified = connector._SSL_CONTEXT_VERIFIED, connector._SSL_CONTEXT_UNVERIFIED
print(json.dumps({
    "verified_cas": verified.cert_store_stats()["x509_ca"],
    "default_cas": ssl.create_default_context().cert_store_stats()["x509_ca"],
    "unverified": [unverified.cert_store_stats()["x509_ca"], unverified.verify_mode == ssl.CERT_NONE,
                   unverified.check_hostname],
    "restored": ssl.SSLContext.set_default_verify_paths is ssl._SSLContext.set_default_verify_paths,
    "verify": asyncio.run(status(True)),
    "no_verify": asyncio.run(status(False)),
}))
"""


@pytest.fixture
def tls_server(tmp_path):
    context, bundle = https_certificates(tmp_path)
    with FakeServer(tls=context) as running:
        yield running, bundle


def probe(url: str, trusted: os.PathLike[str]) -> dict:
    env = {**os.environ, "SSL_CERT_FILE": str(trusted)}
    done = subprocess.run([sys.executable, "-c", PROBE, url + "/v1/chat/completions"], env=env,
                          capture_output=True, text=True, timeout=60, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_aiohttps_unverifying_context_loads_no_ca_bundle_and_its_verifying_one_verifies(tls_server, tmp_path):
    server, bundle = tls_server
    trusted = probe(server.url, bundle)  # the environment trusts the server's CA
    assert trusted["verified_cas"] == trusted["default_cas"] >= 1  # loaded as ssl.create_default_context loads
    assert trusted["unverified"] == [0, True, False] and trusted["restored"]
    assert trusted["verify"] == 200 and trusted["no_verify"] == 200
    (tmp_path / "other").mkdir()
    _, other = https_certificates(tmp_path / "other")  # a CA that did not sign the server's certificate
    untrusted = probe(server.url, other)
    assert untrusted["verify"] == "certificate refused" and untrusted["no_verify"] == 200
