"""A real forwarding HTTP proxy on 127.0.0.1 for the proxy tests: it takes absolute-form requests
(``POST http://host:port/path``), forwards them to that host and answers with what it got back,
and tunnels ``CONNECT host:port`` (how an ``https://`` API is reached through it), keeping each
request's target and ``Proxy-Authorization`` header. :func:`https_certificates` makes a test CA
(trustme) and a certificate for 127.0.0.1, for the fake provider to serve HTTPS."""

from __future__ import annotations

import http.client
import select
import socket
import ssl
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

import trustme

HOP_BY_HOP = {"connection", "keep-alive", "proxy-authorization", "proxy-connection", "transfer-encoding"}


@dataclass
class Forwarded:
    url: str
    proxy_authorization: str | None


@dataclass
class ForwardingProxy:
    seen: list[Forwarded] = field(default_factory=list)
    server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        assert self.server is not None
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self) -> ForwardingProxy:
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                proxy.seen.append(Forwarded(self.path, self.headers.get("Proxy-Authorization")))
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                target = urlsplit(self.path)
                upstream = http.client.HTTPConnection(target.hostname, target.port, timeout=10)
                headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP_BY_HOP}
                upstream.request("POST", target.path, body, headers)
                answer = upstream.getresponse()
                content = answer.read()
                upstream.close()
                self.send_response(answer.status)
                for key, value in answer.getheaders():
                    if key.lower() not in HOP_BY_HOP | {"content-length"}:
                        self.send_header(key, value)
                self.send_header("Content-Length", str(len(content)))
                self.end_headers()
                self.wfile.write(content)

            def do_CONNECT(self) -> None:
                proxy.seen.append(Forwarded(self.path, self.headers.get("Proxy-Authorization")))
                host, _, port = self.path.rpartition(":")
                with socket.create_connection((host, int(port)), timeout=10) as upstream:
                    self.send_response(200, "Connection established")
                    self.end_headers()
                    tunnel(self.connection, upstream)
                self.close_connection = True

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        assert self.server is not None
        self.server.shutdown()
        self.server.server_close()


def tunnel(client: socket.socket, upstream: socket.socket) -> None:
    """Relay bytes both ways until either side closes."""
    sockets = [client, upstream]
    while True:
        readable, _, _ = select.select(sockets, [], [], 10)
        if not readable:
            return
        for source in readable:
            data = source.recv(65536)
            if not data:
                return
            (upstream if source is client else client).sendall(data)


def https_certificates(folder: Path) -> tuple[ssl.SSLContext, Path]:
    """A server context with a certificate for 127.0.0.1, and the PEM file of the CA that signed it
    (what ``SSL_CERT_FILE`` names for the client to trust)."""
    authority = trustme.CA()
    server = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    authority.issue_cert("127.0.0.1").configure_cert(server)
    bundle = folder / "test-ca.pem"
    authority.cert_pem.write_to_path(str(bundle))
    return server, bundle
