"""The response cache: every target response stored content-addressed under ``.evalsite/cache/``.

A study re-run should not pay twice. The key of a response is the hash of what decides it: the
resolved target config (arm, target, params, settings with secrets redacted, checkpoint), the
rendered input sent and the repeat index. Repeat ``k`` therefore only ever replays repeat
``k``'s response: a hit is the same sample again, never a new independent one.

Modes: ``off`` (no cache), ``record`` (call, store every successful response), ``replay``
(call nothing; a missing response fails its case), ``auto`` (replay what exists, record the
rest). The cache wraps a target, so a hit starts nothing beneath it (no hooks, no call) and a
retry of a miss is an ordinary retry.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TypedDict

from evalsite.calls.targets import TargetRequest, TargetResult
from evalsite.calls.targets.base import Target, scrubbed_result, target_secrets
from evalsite.experiment.manifest import Manifest
from evalsite.experiment.plan import Config
from evalsite.jsonshape import JSONObject
from evalsite.runlog.hashing import sha256_json
from evalsite.runlog.secrets import redact_secrets, secret_pattern

CACHE_MODES = ("off", "record", "replay", "auto")
CACHE_DIR = Path(".evalsite") / "cache"
CACHE_FORMAT = 1
HIT, RECORDED, MISSING = "hit", "recorded", "missing"
SCHEDULE_SETTINGS = ("timeout", "max_connections")  # how a call is made, not what it answers


def cache_dir(project_root: Path) -> Path:
    return project_root / CACHE_DIR


def target_identity(config: Config) -> JSONObject:
    """What of a config decides its responses: the arm (so two identical arms, an A/A pair, stay
    two independent samples), target, params, settings (not those that only say how a call is
    made) and checkpoint. Not the price, nor the prompt variables (they are in the input)."""
    return {
        "arm_id": config.arm_id,
        "target": config.target,
        "params": config.params,
        "settings": redact_secrets({k: v for k, v in config.settings.items() if k not in SCHEDULE_SETTINGS}),
        "checkpoint": config.resolved.get("checkpoint"),
    }


def response_key(identity: JSONObject, request: TargetRequest) -> str:
    own = {} if identity.get("checkpoint") or not request.checkpoint else {"item_checkpoint": request.checkpoint["id"]}
    return sha256_json({"format": CACHE_FORMAT, "target": identity, "input": request.input, "repeat": request.repeat,
                        **own})  # an item's own inputs.checkpoint.load starts another state


class CacheStats(TypedDict):
    """What ``evalsite cache stats`` shows (:meth:`ResponseCache.stats`)."""

    path: str
    entries: int
    bytes: int
    by_target: dict[str, int]
    oldest: str | None
    newest: str | None


@dataclass
class ResponseCache:
    """The store: one JSON file per response, ``<root>/<key[:2]>/<key>.json``."""

    root: Path

    def path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str) -> JSONObject | None:
        """The entry stored under ``key``; ``None`` when there is none or it is unreadable."""
        try:
            entry = json.loads(self.path(key).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        return entry if isinstance(entry, dict) else None

    def put(self, key: str, entry: JSONObject) -> None:
        """Written to a temporary file and renamed: a reader never sees half an entry."""
        path = self.path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary = path.with_suffix(f".{uuid.uuid4().hex}.tmp")  # unique: two writers of one key never share it
        text = json.dumps(entry, ensure_ascii=False, default=str)
        try:
            data = text.encode("utf-8")
        except UnicodeEncodeError:  # a reply's lone surrogate: kept as its escape, read back as it was
            data = json.dumps(entry, default=str).encode("ascii")
        temporary.write_bytes(data)
        temporary.replace(path)

    def entries(self) -> list[Path]:
        return sorted(self.root.glob("*/*.json")) if self.root.is_dir() else []

    def stats(self) -> CacheStats:
        """Entries, bytes and entries per target; the oldest and newest recording time."""
        by_target: dict[str, int] = {}
        recorded: list[str] = []
        size = 0
        for path in self.entries():
            size += path.stat().st_size
            entry = self.get(path.stem) or {}
            by_target[entry.get("target", "?")] = by_target.get(entry.get("target", "?"), 0) + 1
            if entry.get("recorded_at"):
                recorded.append(entry["recorded_at"])
        return {
            "path": str(self.root),
            "entries": sum(by_target.values()),
            "bytes": size,
            "by_target": dict(sorted(by_target.items())),
            "oldest": min(recorded, default=None),
            "newest": max(recorded, default=None),
        }

    def prune(self, older_than_days: float | None) -> int:
        """Delete entries recorded more than ``older_than_days`` ago (every entry when ``None``)."""
        try:
            cutoff = None if older_than_days is None else datetime.now(UTC) - timedelta(days=older_than_days)
        except OverflowError:  # further back than a datetime reaches (inf, 1e9 days): nothing is that old
            cutoff = datetime.min.replace(tzinfo=UTC)
        removed = 0
        for path in self.entries():
            entry = self.get(path.stem) or {}
            if cutoff is not None and _recorded(entry) >= cutoff:
                continue
            path.unlink(missing_ok=True)
            removed += 1
        for folder in self.root.glob("*") if self.root.is_dir() else []:
            if folder.is_dir() and not any(folder.iterdir()):
                folder.rmdir()
        return removed


def _recorded(entry: JSONObject) -> datetime:
    try:
        return datetime.fromisoformat(entry["recorded_at"])
    except (KeyError, TypeError, ValueError):
        return datetime.min.replace(tzinfo=UTC)  # unreadable entries are the oldest


class CachingTarget:
    """A target behind the cache. A hit answers with the stored result, marked ``extra.cache``.

    The secrets the target read are scrubbed from a response before it is stored, and again from
    a stored one when it is replayed (an entry written before scrubbing, or copied in from
    elsewhere), exactly as a run without the cache scrubs its cases."""

    def __init__(self, inner: Target, cache: ResponseCache, mode: str, identity: JSONObject):
        self.inner, self.cache, self.mode, self.identity = inner, cache, mode, identity
        self.kind = getattr(inner, "kind", "?")
        self.replays_turns = getattr(inner, "replays_turns", True)
        self.secrets_pattern = secret_pattern(target_secrets(inner))

    async def generate(self, request: TargetRequest) -> TargetResult:
        key = response_key(self.identity, request)
        if self.mode in ("replay", "auto"):
            entry = self.cache.get(key)
            if entry is not None:
                result = scrubbed_result(TargetResult(**entry["result"]), self.secrets_pattern)
                result.extra = {"cache": HIT, "latency_ms": entry.get("latency_ms")}
                return result
            if self.mode == "replay":
                return TargetResult(error=f"cache replay: no recorded response for item {request.item_id!r} "
                                          f"repeat {request.repeat} (key {key[:12]})", extra={"cache": MISSING})
        clock = time.perf_counter()
        result = scrubbed_result(await self.inner.generate(request), self.secrets_pattern)
        if not result.called:  # a pre step failed before any call: nothing recorded, nothing marked
            return result
        if result.error is None:  # written in a thread: the event loop keeps serving the other cases
            await asyncio.to_thread(self.cache.put, key, {
                "target": self.identity["target"], "recorded_at": datetime.now(UTC).isoformat(),
                "latency_ms": round((time.perf_counter() - clock) * 1000, 3),
                "result": {k: v for k, v in asdict(result).items() if k not in ("extra", "called")},
            })
        result.extra = {**result.extra, "cache": RECORDED}
        return result

    async def aclose(self) -> None:
        await self.inner.aclose()


def cache_mode(manifest: Manifest, requested: str | None) -> str:
    """``--cache`` when given, else the manifest's ``emulation.cache``, else ``off``."""
    return requested or (manifest.emulation or {}).get("cache", "off")


def with_cache(target: Target, mode: str, project_root: Path, config: Config) -> Target:
    """``target`` itself when the cache is off, else behind the cache."""
    if mode == "off":
        return target
    return CachingTarget(target, ResponseCache(cache_dir(project_root)), mode, target_identity(config))


def case_cache_mark(results: list[TargetResult]) -> str | None:
    """A case's ``cache`` field: ``hit`` when every call was served from the cache, ``missing``
    when replay had no response, else ``recorded``; ``None`` with the cache off."""
    marks = [r.extra.get("cache") for r in results if isinstance(r.extra, dict)]
    if not marks or None in marks:
        return None
    if MISSING in marks:
        return MISSING
    return HIT if all(mark == HIT for mark in marks) else RECORDED
