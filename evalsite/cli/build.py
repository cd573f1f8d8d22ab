"""``evalsite build`` and ``evalsite serve``."""

from __future__ import annotations

import signal
import threading
from pathlib import Path

import click

from evalsite.cli.lean import pyarrow_without_pandas
from evalsite.cli.output import print_json, warn
from evalsite.project import find_project
from evalsite.site.unchanged import recorded_report


@click.command("build")
@click.option("--out", "out_dir", type=click.Path(path_type=Path), help="Output folder (default: [site] out, else site/).")
@click.option("--redact/--no-redact", default=None, help="Leave inputs, expected values and outputs out (default: [site] redact).")
@click.option("--full", is_flag=True, help="Re-render every page, even those whose inputs did not change.")
@click.option("--json", "as_json", is_flag=True, help="Print what the build did as JSON.")
@click.option("--strict", is_flag=True, help="Exit 1 when anything was left out (an unreadable manifest, run or decision line).")
def build_command(out_dir: Path | None, redact: bool | None, full: bool, as_json: bool, strict: bool) -> None:
    """Render the static site (only pages whose inputs changed)."""
    project = find_project()
    report = None if full else recorded_report(project, out_dir, redact)  # nothing new: the renderer is not even loaded
    if report is None:
        from evalsite.site.build import build_site

        pyarrow_without_pandas(load=True)
        report = build_site(project, out_dir, redact=redact, full=full)
    problems = [*(f"skipped run {reason}" for reason in report.skipped_runs), *report.warnings]
    for message in problems:
        warn(message)
    if as_json:
        print_json(report.to_json())
    else:
        click.echo(f"built {report.pages} pages ({report.rendered} jobs rendered, {report.kept} unchanged, "
                   f"{report.bytes / 1e6:.1f} MB) in {report.seconds:.1f} s; open {report.out_dir / 'index.html'}")
    if strict and problems:
        raise click.ClickException(f"--strict: {len(problems)} warning{'s' * (len(problems) != 1)} (above); the site was built")



@click.command("serve")
@click.option("--port", type=click.IntRange(0, 65535), default=8000, show_default=True, help="Port on 127.0.0.1 (0: any free port).")
@click.option("--out", "out_dir", type=click.Path(path_type=Path), help="Build into this folder (default: a temporary one).")
def serve_command(port: int, out_dir: Path | None) -> None:
    """Serve the site on 127.0.0.1 and rebuild it when runs, data, manifests or the theme change."""
    from evalsite.site.serve import serve

    stopping = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stopping.set())
    live = None
    try:
        live = serve(find_project(), port=port, out_dir=out_dir, report=lambda message: click.echo(message, err=True))
        click.echo(f"serving {live.url} (Ctrl-C to stop)")
        while not stopping.wait(1):
            pass
    except KeyboardInterrupt:  # Ctrl-C is how a server stops: at any moment, exit 0 and clean up
        pass
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C must not cut the clean-up short
        if live is not None:
            live.stop()
