"""`evalsite serve` answers only requests for this machine's names and serves only files really inside
its folder (issue 32, Low 8, 9 and 12): raw HTTP requests to a real server on 127.0.0.1."""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from sitekit import case, write_run

from evalsite.project import find_project
from evalsite.site.serve import LiveSite, serve

SECRET = "SECRET_0123456789_abcdef"


def serving(root: Path) -> Iterator[LiveSite]:
    """A project of one run at ``root``, built and served on a port of its own until the end."""
    (root / "data").mkdir(parents=True)
    write_run(root / "runs", "20260101T000000Z-first-0001", [case("i1")], arm="first")
    site = serve(find_project(root), port=0, out_dir=root / "site", debounce=0.05, report=lambda message: None)
    try:
        yield site
    finally:
        site.stop()


@pytest.fixture(scope="module")
def served_site(tmp_path_factory):
    """One server for the file's tests that only send requests: none changes its files or its state."""
    yield from serving(tmp_path_factory.mktemp("served") / "project")


@pytest.fixture
def own_served_site(tmp_path):
    """A server of the test's own, for a test that plants files in the site folder."""
    yield from serving(tmp_path / "project")


def request(served_site, path: str, host: str | None = "default", method: str = "GET", version: str = "HTTP/1.1") -> tuple[int, bytes]:
    """The status and body of one raw request (``host=None``: no Host header)."""
    lines = [f"{method} {path} {version}"]
    if host is not None:
        lines.append(f"Host: {f'127.0.0.1:{served_site.port}' if host == 'default' else host}")
    lines.append("Connection: close")
    with socket.create_connection(("127.0.0.1", served_site.port), timeout=10) as connection:
        connection.sendall(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1"))
        answer = b""
        while chunk := connection.recv(65536):
            answer += chunk
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1."), answer[:200]  # an answer, not a dropped connection
    return int(head.split()[1]), body


def test_the_site_is_served_to_local_names_with_the_port(served_site):
    for host in (f"127.0.0.1:{served_site.port}", f"localhost:{served_site.port}", f"LOCALHOST:{served_site.port}", f"[::1]:{served_site.port}"):
        status, body = request(served_site, "/", host)
        assert status == 200 and b"first" in body, host


@pytest.mark.parametrize("host", ["attacker.example", "attacker.example:{port}", "127.0.0.1.attacker.example:{port}",
                                  "127.0.0.1:1", "localhost", "127.0.0.1", ""])
def test_another_host_is_refused_so_dns_rebinding_reads_nothing(served_site, host):
    status, body = request(served_site, "/", host.format(port=served_site.port))
    assert status == 421 and b"first" not in body
    assert request(served_site, "/.evalsite-epoch", host.format(port=served_site.port))[0] == 421
    assert request(served_site, "/", host.format(port=served_site.port), method="HEAD")[0] == 421


def test_a_request_without_host_is_refused(served_site):
    status, body = request(served_site, "/", None, version="HTTP/1.0")
    assert status == 400 and b"first" not in body


def test_symlinks_planted_in_the_site_folder_are_not_followed_out_of_it(own_served_site, tmp_path):
    secret = tmp_path / "passwd"
    secret.write_text(SECRET)
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside/notes.txt").write_text(SECRET)
    site = Path(own_served_site.out_dir)
    os.symlink(secret, site / "passwd")
    os.symlink(tmp_path / "outside", site / "linked")
    os.symlink(site / "index.html", site / "alias.html")  # stays inside: served
    for path in ("/passwd", "/linked/notes.txt", "/linked/", "/linked", "/%70asswd", "/./passwd", "/runs/../passwd"):
        status, body = request(own_served_site, path)
        assert status == 404 and SECRET.encode() not in body, path
    assert request(own_served_site, "/alias.html")[0] == 200


@pytest.mark.parametrize("path", ["/%00", "/%00.html", "/runs/%00", "/%ff", "/%ed%a0%80", "/%c0%af", "/" + "a" * 5000])
def test_a_path_no_file_can_have_is_a_clean_404(served_site, path, capfd):
    assert request(served_site, path)[0] == 404
    assert request(served_site, "/")[0] == 200  # the server is still up
    assert "Traceback" not in capfd.readouterr().err


def test_no_folder_is_listed(served_site):
    folders = [p for p in Path(served_site.out_dir).rglob("*") if p.is_dir() and not (p / "index.html").exists()]
    assert folders
    for folder in folders[:3]:
        status, body = request(served_site, "/" + folder.relative_to(served_site.out_dir).as_posix() + "/")
        assert status == 404 and b"Directory listing" not in body
