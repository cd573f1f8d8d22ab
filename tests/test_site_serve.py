"""``serve``: pages over HTTP on 127.0.0.1, rebuilt after changes, surviving a broken build."""

from __future__ import annotations

import time
import urllib.request
from pathlib import Path

import pytest
from sitekit import case, write_run

from evalsite.errors import SiteError
from evalsite.project import find_project
from evalsite.site.serve import serve


def fetch(url: str) -> str:
    with urllib.request.urlopen(url, timeout=10) as response:
        return response.read().decode("utf-8")


def wait_for(condition, seconds: float = 20.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out waiting for a rebuild"
        time.sleep(0.05)


@pytest.fixture
def live(tmp_path):
    """``evalsite serve`` on a one-run project (port 0), stopped after the test; ``live.messages`` holds what it reported."""
    root = tmp_path / "project"
    (root / "data").mkdir(parents=True)
    write_run(root / "runs", "20260101T000000Z-first-0001", [case("i1")], arm="first")
    messages: list[str] = []
    site = serve(find_project(root), port=0, out_dir=tmp_path / "out", debounce=0.05, report=messages.append)
    site.messages = messages
    try:
        yield site
    finally:
        site.stop()


def test_serves_the_site_with_the_reload_script_and_an_epoch(live):
    home = fetch(live.url)
    assert "first" in home and "livereload." in home
    assert fetch(live.url + ".evalsite-epoch") == "1"


def test_a_new_run_is_rebuilt_and_served(live):
    write_run(live.project_root / "runs", "20260101T000001Z-second-0002", [case("i1")], arm="second")
    wait_for(lambda: live.epoch >= 2)
    assert "second" in fetch(live.url)
    assert fetch(live.url + "runs/20260101T000001Z-second-0002.html")


def test_a_broken_template_is_reported_and_the_last_site_stays_up(live):
    templates = live.project_root / "templates"
    templates.mkdir()
    (templates / "index.html").write_text("{% extends 'base.html' %}{% block content %}{{ oops(}}{% endblock %}")
    wait_for(lambda: live.last_error is not None)
    assert "template error" in live.last_error and "index.html" in live.last_error
    assert "first" in fetch(live.url)
    (templates / "index.html").write_text("{% extends 'builtin/index.html' %}{% block content %}FIXED{% endblock %}")
    wait_for(lambda: live.last_error is None and "FIXED" in fetch(live.url))


def test_a_busy_port_is_a_one_line_error(live, tmp_path):
    with pytest.raises(SiteError, match=rf"cannot serve on 127.0.0.1:{live.port}"):
        serve(find_project(live.project_root), port=live.port, out_dir=tmp_path / "other")


def test_without_out_the_site_is_built_in_a_temporary_folder(tmp_path):
    root = tmp_path / "p"
    (root / "data").mkdir(parents=True)
    site = serve(find_project(root), port=0, report=lambda message: None)
    try:
        assert not (root / "site").exists() and Path(site.out_dir, "index.html").is_file()
    finally:
        site.stop()
    assert not site.out_dir.exists()


def test_after_a_rebuild_the_server_stays_idle(live):
    """The rebuild reads every run (watchdog 7 reports reads as opened/closed_no_write events): those
    reads, and reading the inputs from outside, must not start another build or reload the pages."""
    write_run(live.project_root / "runs", "20260101T000001Z-second-0002", [case("i1")], arm="second")
    wait_for(lambda: live.epoch >= 2)
    time.sleep(0.5)  # let a (wrong) follow-up build start if the rebuild's own reads were taken as changes
    epoch, builds = live.epoch, len(live.messages)
    deadline = time.monotonic() + 3
    while time.monotonic() < deadline:
        for path in (live.project_root / "runs").rglob("*"):
            if path.is_file():
                path.read_bytes()
        time.sleep(0.2)
        assert (live.epoch, len(live.messages)) == (epoch, builds), live.messages


def test_a_change_that_renders_nothing_does_not_reload_pages(live):
    run = next((live.project_root / "runs").iterdir())
    manifest = next(p for p in run.iterdir() if p.is_file())
    before = len(live.messages)
    manifest.write_bytes(manifest.read_bytes())  # a modification event, the same bytes
    wait_for(lambda: len(live.messages) > before)
    assert "(0 rendered)" in live.messages[-1] and live.epoch == 1
