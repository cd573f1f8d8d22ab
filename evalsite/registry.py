"""One registry type for every extension kind: targets, evaluators, importers, pipeline steps, pages.

A :class:`Registry` maps names to objects. The built-ins register exactly as a plugin does; a
name is taken once (a second ``register`` is refused, naming who holds it, unless
``replace=True``), and an installed package adds names through an entry-point group
(``evalsite.targets``, ``evalsite.evaluators``, …), loaded the first time a name is not found
or the whole list is asked for (each entry point is imported once). Loading an entry point imports what it names; the module's own
``register_*`` calls do the registering (docs/reference/plugins.md). A kind may name the module
that registers each built-in (``builtins``): that module is imported the first time its name is
looked up, and every one before the whole list is given, a plugin registers or a test isolates
the registry, so a command loads only the built-ins it uses (a run without evaluators, none).
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Generic, TypeVar

from evalsite.errors import EvalsiteError, did_you_mean

if TYPE_CHECKING:
    from importlib.metadata import EntryPoint

T = TypeVar("T")

BUILT_IN = "built-in"


@dataclass(frozen=True)
class Entry(Generic[T]):
    """One registered name: the object and where it came from (``built-in``, a plugin, a module)."""

    value: T
    origin: str


class Registry(Generic[T]):
    """Names → objects of one extension kind, with the entry points of ``group`` loaded on demand.

    ``kind`` is how a message names an entry (``target``: "target 'openai' is already
    registered"), ``unknown_as`` how it names an unknown one (default ``kind``: "unknown target
    kind 'opena'"); ``error`` the :class:`~evalsite.errors.EvalsiteError` class every refusal raises.
    """

    def __init__(self, kind: str, group: str, error: type[EvalsiteError] = EvalsiteError, *,
                 unknown_as: str | None = None, builtins: Mapping[str, str] | None = None) -> None:
        self.kind = kind
        self.group = group
        self.error = error
        self.unknown_as = unknown_as or kind
        self._entries: dict[str, Entry[T]] = {}
        self._builtins = dict(builtins or {})  # name -> the module registering it, not imported yet
        self._loaded: set[tuple[str, str]] = set()  # (name, value) of each entry point imported
        self._loading: EntryPoint | None = None
        self._lock = threading.RLock()

    def register(self, name: str, value: T, *, replace: bool = False, module: str | None = None) -> T:
        """Register ``value`` under ``name``; refused when the name is taken, unless ``replace``.
        ``module`` is where it is defined (default: ``value.__module__``), which says whether it is
        a built-in."""
        origin = self._origin(module or getattr(value, "__module__", None))
        if origin != BUILT_IN:  # a plugin's name is checked against every built-in, registered first
            self._load_builtins()
        held = self._entries.get(name)
        if held is not None and not replace:
            raise self.error(f"{self.kind} {name!r} is already registered ({held.origin}); "
                             "pass replace=True to override")
        self._entries[name] = Entry(value, origin)
        return value

    def find(self, name: str) -> T | None:
        """The object registered as ``name`` (the plugins are loaded first when it is not), or None."""
        if name not in self._entries and name in self._builtins:
            with self._lock:  # another thread looking it up meanwhile waits here or in load_plugins
                module = self._builtins.pop(name, None)
                if module is not None:
                    importlib.import_module(module)
        if name not in self._entries:
            self.load_plugins()
        entry = self._entries.get(name)
        return None if entry is None else entry.value

    def get(self, name: str) -> T:
        """The object registered as ``name``; unknown: the error :meth:`unknown` words."""
        value = self.find(name)
        if value is None:
            raise self.error(self.unknown(name))
        return value

    def unknown(self, name: str, known: Sequence[str] | None = None) -> str:
        """``unknown target 'opena'; did you mean 'openai'? (known: …)``; ``known`` as shown (default :meth:`names`)."""
        names = self.names()
        shown = list(known) if known is not None else names
        return f"unknown {self.unknown_as} {name!r}{did_you_mean(name, names)} (known: {', '.join(shown)})"

    def names(self) -> list[str]:
        """Every registered name, sorted, the plugins' included."""
        self.load_plugins()
        return sorted(self._entries)

    def values(self) -> list[T]:
        """Every registered object in the order registered (built-ins first), the plugins' included."""
        self.load_plugins()
        return [entry.value for entry in self._entries.values()]

    def origin(self, name: str) -> str:
        """Where ``name`` came from: ``built-in``, ``plugin <distribution>`` or ``<module>``."""
        return self._entries[name].origin

    @contextmanager
    def isolated(self) -> Iterator[Registry[T]]:
        """Undo, on leaving, every registration made inside (a test registering extras)."""
        self._load_builtins()
        entries, loaded = dict(self._entries), set(self._loaded)
        try:
            yield self
        finally:
            self._entries, self._loaded = entries, loaded

    def load_plugins(self) -> None:
        """Import every module named by an entry point of :attr:`group` not imported yet (a package
        installed since the last look is found); a plugin that fails to load, or registers a taken
        name, is named in one line, and again at the next look."""
        from importlib.metadata import entry_points  # only on a miss: it costs more to import than the rest

        self._load_builtins()
        with self._lock:
            for entry in entry_points(group=self.group):
                if (entry.name, entry.value) not in self._loaded:
                    self._load(entry)
                    self._loaded.add((entry.name, entry.value))

    def _load_builtins(self) -> None:
        """Import every built-in's module not imported yet (one module may register several names)."""
        with self._lock:
            while self._builtins:
                importlib.import_module(self._builtins.pop(next(iter(self._builtins))))

    def _load(self, entry: EntryPoint) -> None:
        self._loading = entry
        try:
            entry.load()
        except Exception as exc:  # a broken plugin must name itself, not crash with a traceback
            message = exc.message if isinstance(exc, EvalsiteError) else str(exc)
            raise self.error(f"{self.kind} plugin {entry.name!r} ({entry.value}) failed to load: {message}") from None
        finally:
            self._loading = None

    def _origin(self, module: str | None) -> str:
        """Built-in when defined inside evalsite (even while a plugin's import brings the built-ins in)."""
        if module is not None and (module == "evalsite" or module.startswith("evalsite.")):
            return BUILT_IN
        if self._loading is not None:
            dist = self._loading.dist
            return f"plugin {dist.name if dist is not None else self._loading.value}"
        return module or "unknown module"
