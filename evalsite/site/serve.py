"""``evalsite serve``: the site on 127.0.0.1, rebuilt when its inputs change, pages reloading themselves.

The watchdog callback only records that something changed; a separate loop waits for a short quiet
period (debounce), rebuilds incrementally, and bumps an epoch that every served page polls at
``/.evalsite-epoch`` (the ``livereload.js`` asset, included only when serving) when the rebuild
rendered something. Only events that change files count (see :data:`CHANGE_EVENTS`) and the output
folder is ignored, so the server never reacts to its own reads or writes. A failed build is reported
and the last good site keeps being served.
"""

from __future__ import annotations

import functools
import io
import os
import secrets
import shutil
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http import HTTPStatus
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, BinaryIO

from watchdog.events import (
    EVENT_TYPE_CREATED,
    EVENT_TYPE_DELETED,
    EVENT_TYPE_MODIFIED,
    EVENT_TYPE_MOVED,
    FileSystemEvent,
    FileSystemEventHandler,
)
from watchdog.observers import Observer

from evalsite.errors import SiteError
from evalsite.project import Project, find_project
from evalsite.site.build import build_site

#: The names a request's Host header may give (with the server's port): pages opened on this machine.
LOCAL_HOSTS = ("127.0.0.1", "localhost", "[::1]")
WATCHED_FOLDERS = ("runs", "experiments", "data", "reports", "templates", "static")
EPOCH_PATH = "/.evalsite-epoch"
#: Events that change a file. watchdog 7 also reports ``opened``, ``closed_no_write`` and ``attrib``
#: for plain reads (the build's own reads included); reacting to those rebuilds forever.
CHANGE_EVENTS = frozenset({EVENT_TYPE_CREATED, EVENT_TYPE_MODIFIED, EVENT_TYPE_MOVED, EVENT_TYPE_DELETED})


class _Changes(FileSystemEventHandler):
    """Sets a flag; never builds (builds run on the loop's thread, after a quiet period)."""

    def __init__(self, relevant: Callable[[str], bool]):
        self.relevant = relevant
        self.flag = threading.Event()
        self.last = 0.0

    def on_any_event(self, event: FileSystemEvent) -> None:
        if event.event_type not in CHANGE_EVENTS:
            return
        paths = [event.src_path, getattr(event, "dest_path", "") or ""]
        if any(p and self.relevant(str(p)) for p in paths):
            self.last = time.monotonic()
            self.flag.set()


@dataclass
class LiveSite:
    """A running server: ``url``, the current ``epoch``, the ``last_error`` of a failed rebuild."""

    project_root: Path
    out_dir: Path
    port: int = 8000
    debounce: float = 0.3
    report: Callable[[str], None] = print
    temporary: bool = False
    epoch: int = 0
    last_error: str | None = None
    _stop: threading.Event = field(default_factory=threading.Event)
    _threads: list[threading.Thread] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/"

    def start(self) -> LiveSite:
        self._build()
        if self.last_error:
            raise SiteError(self.last_error)
        handler = functools.partial(_Handler, self, directory=str(self.out_dir))
        try:
            self._server = ThreadingHTTPServer(("127.0.0.1", self.port), handler)
        except OSError as exc:
            raise SiteError(f"cannot serve on 127.0.0.1:{self.port}: {exc.strerror}; choose another --port") from None
        self.port = self._server.server_address[1]
        self._changes = _Changes(self._relevant)
        self._observer = Observer()
        self._watched: set[str] = set()
        self._watch_folders()
        self._observer.schedule(self._changes, str(self.project_root), recursive=False)
        self._observer.start()
        for target in (self._server.serve_forever, self._rebuild_loop):
            thread = threading.Thread(target=target, daemon=True)
            thread.start()
            self._threads.append(thread)
        return self

    def stop(self) -> None:
        self._stop.set()
        self._observer.stop()
        self._server.shutdown()
        self._server.server_close()
        self._observer.join(timeout=5)
        for thread in self._threads:
            thread.join(timeout=5)
        if self.temporary:
            shutil.rmtree(self.out_dir.parent, ignore_errors=True)

    def _watch_folders(self) -> None:
        """Watch every input folder that exists, including one created since the server started
        (its creation is an event of the project root; the rebuild that follows reads its files)."""
        for name in WATCHED_FOLDERS:
            if name not in self._watched and (self.project_root / name).is_dir():
                self._observer.schedule(self._changes, str(self.project_root / name), recursive=True)
                self._watched.add(name)

    def _relevant(self, path: str) -> bool:
        changed = Path(path)
        if changed == self.out_dir or self.out_dir in changed.parents:
            return False
        if changed.parent == self.project_root:
            return changed.name == "evalsite.toml" or changed.name in WATCHED_FOLDERS
        return True

    def _rebuild_loop(self) -> None:
        while not self._stop.is_set():
            if not self._changes.flag.wait(0.1):
                continue
            while time.monotonic() - self._changes.last < self.debounce and not self._stop.is_set():
                time.sleep(self.debounce / 4)
            self._changes.flag.clear()
            if not self._stop.is_set():
                self._watch_folders()
                self._build()

    def _build(self) -> None:
        try:
            report = build_site(find_project(self.project_root), self.out_dir, live_reload=True)
        except Exception as exc:  # the server must outlive any failed build; the reason is reported
            self.last_error = getattr(exc, "message", None) or f"{type(exc).__name__}: {exc}"
            self.report(f"build failed: {self.last_error} (still serving the last good site)")
            return
        self.last_error = None
        if report.rendered or not self.epoch:  # open pages reload only when a page actually changed
            self.epoch += 1
        self.report(f"built {report.pages} pages ({report.rendered} rendered) in {report.seconds:.1f} s")
        for problem in [*(f"skipped run {reason}" for reason in report.skipped_runs), *report.warnings]:
            self.report(f"warning: {problem}")


class _Handler(SimpleHTTPRequestHandler):
    """Files of the served folder only, to pages opened from this machine (docs/security.md):

    - a request whose ``Host`` is not ``127.0.0.1``, ``localhost`` or ``[::1]`` with the server's port
      is answered 421 (400 without a ``Host``): a web page whose name was rebound to 127.0.0.1 (DNS
      rebinding) cannot read the site;
    - a path whose real path (symlinks resolved) leaves the served folder, names no file (a NUL, an
      undecodable escape) or is a folder without ``index.html`` is answered 404: no symlink planted in
      the site folder is followed out of it, and no folder is listed."""

    def __init__(self, live: LiveSite, *args: Any, **kwargs: Any) -> None:
        self.live = live
        super().__init__(*args, **kwargs)

    def do_GET(self) -> None:
        if not self._host_allowed():
            return
        if self.path.split("?")[0] == EPOCH_PATH:
            body = str(self.live.epoch).encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Cache-Control", "no-store")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        super().do_GET()

    def do_HEAD(self) -> None:
        if self._host_allowed():
            super().do_HEAD()

    def _host_allowed(self) -> bool:
        host = self.headers.get("Host")
        if host is None:
            self.send_error(HTTPStatus.BAD_REQUEST, "Host header required")
            return False
        port = self.live.port
        allowed = {f"{name}:{port}" for name in LOCAL_HOSTS} | (set(LOCAL_HOSTS) if port == 80 else set())
        if host.strip().lower() not in allowed:
            self.send_error(HTTPStatus.MISDIRECTED_REQUEST, "evalsite serve answers only 127.0.0.1 and localhost")
            return False
        return True

    def send_head(self) -> io.BytesIO | BinaryIO | None:
        if not self._servable():
            self.send_error(HTTPStatus.NOT_FOUND, "File not found")
            return None
        return super().send_head()

    def _servable(self) -> bool:
        """The request names a file whose real path is inside the served folder (or such a folder's index)."""
        try:
            path = self.translate_path(self.path)
            if "\0" in path:
                return False
            real, root = os.path.realpath(path), os.path.realpath(self.directory)
            if os.path.isdir(real):
                real = os.path.realpath(os.path.join(real, "index.html"))
            return real.startswith(root + os.sep) and os.path.isfile(real)
        except (ValueError, UnicodeError):
            return False

    def list_directory(self, path: str | os.PathLike[str]) -> io.BytesIO | None:
        """Never list a folder (a folder without index.html is not a page of the site)."""
        self.send_error(HTTPStatus.NOT_FOUND, "File not found")
        return None

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: one line per request would drown the build messages."""


def serve(project: Project, *, port: int = 8000, out_dir: Path | None = None, debounce: float = 0.3,
          report: Callable[[str], None] = print) -> LiveSite:
    """Build and start serving; the caller stops it with :meth:`LiveSite.stop`. Without ``out_dir``
    the site is built in a temporary folder (so the published ``site/`` never holds the reload script)."""
    # A Ctrl-C can land between mkdtemp creating the folder and its name reaching a variable, so on
    # failure the folder is found again by a prefix unique to this call, not by the variable.
    prefix = f"evalsite-serve-{secrets.token_hex(6)}-"
    try:
        folder = Path(out_dir) if out_dir else Path(tempfile.mkdtemp(prefix=prefix)) / "site"
        live = LiveSite(project.root.resolve(), folder.resolve(), port, debounce, report, temporary=out_dir is None)
        return live.start()
    except BaseException:
        if out_dir is None:
            for leftover in Path(tempfile.gettempdir()).glob(f"{prefix}*"):
                shutil.rmtree(leftover, ignore_errors=True)
        raise
