"""A run's declared artifacts (its ``end.json`` ``artifacts``) copied beside its page and linked.

Only files inside the run's folder are copied, each up to :data:`MAX_ARTIFACT_BYTES`; plots
(SVG, PNG) are shown inline as images, anything else is a download. With ``redact`` on nothing is
copied: an artifact may hold inputs and outputs.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from evalsite.site import paths

MAX_ARTIFACT_BYTES = 10 * 1024 * 1024
INLINE_SUFFIXES = (".svg", ".png")


@dataclass(frozen=True)
class ArtifactLink:
    name: str
    type: str
    href: str
    inline: bool


def run_artifacts(run_id: str, directory: Path, end: dict | None, redact: bool) -> tuple[list[ArtifactLink], dict[str, bytes]]:
    """The links a run page lists and the files to write for them."""
    declared = (end or {}).get("artifacts") if isinstance(end, dict) else None
    if redact or not isinstance(declared, dict):
        return [], {}
    root = directory.resolve()
    links, files = [], {}
    for name, entry in sorted(declared.items()):
        if not isinstance(entry, dict) or not isinstance(entry.get("path"), str):
            continue
        path = (root / entry["path"]).resolve()
        if root not in path.parents or not path.is_file() or path.stat().st_size > MAX_ARTIFACT_BYTES:
            continue
        href = f"{paths.run(run_id).removesuffix('.html')}/artifacts/{paths.slug(name)}{path.suffix.lower()}"
        files[href] = path.read_bytes()
        links.append(ArtifactLink(str(name), str(entry.get("type", "")), href, path.suffix.lower() in INLINE_SUFFIXES))
    return links, files
