"""The one YAML loader for every YAML file a user hands us: safe, and bounded as it reads.

PyYAML's composer recurses once per nesting level and its scanner does work proportional to the
open flow collections (``[`` and ``{``) for every token, so a ``[[[[…`` 20,000 deep costs seconds
of scanning before it ends in ``RecursionError`` — the deeper the recursion limit, the longer.
Aliases cost nothing to read but expand without bound when the value is later copied, dumped or
walked (a "billion laughs" file). :class:`BoundedLoader` refuses both at the node that crosses the
bound, in the one pass that reads the text: nesting deeper than :data:`~bounded.MAX_DEPTH` (flow and
block alike, and through aliases) and a document of more than :data:`~bounded.MAX_VALUES` values
with each use of an alias counted again, as :func:`~bounded.shape_problem` counts them after the fact.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import yaml
from yaml.nodes import MappingNode, Node, SequenceNode

from evalsite.experiment.bounded import MAX_DEPTH, MAX_VALUES, json_problem, too_deep, too_many

_Collection = TypeVar("_Collection", SequenceNode, MappingNode)

#: The largest YAML or JSON file a user hands us that is read whole (a manifest, an overlay, a curve,
#: step, prompt or schema file): past it, a dataset named where such a file belongs or a hostile
#: file, refused before a byte is read (PyYAML reads ~1 MB a second).
MAX_DOCUMENT_BYTES = 10_000_000


class DocumentUnreadable(ValueError):
    """A file read whole that cannot be: unreadable, not UTF-8 or too large; its text says which, in
    one line, for the reader to prefix with the file's name."""


class DocumentTooLarge(DocumentUnreadable):
    """A file past :data:`MAX_DOCUMENT_BYTES`."""


def document_text(path: Path) -> str:
    """The UTF-8 text of a YAML or JSON file read whole, or :class:`DocumentUnreadable`."""
    try:
        size = path.stat().st_size
        if size > MAX_DOCUMENT_BYTES:
            raise DocumentTooLarge(f"{size / 1e6:.1f} MB; a file read whole may hold at most "
                                   f"{MAX_DOCUMENT_BYTES // 1_000_000} MB")
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise DocumentUnreadable(f"not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except OSError as exc:
        raise DocumentUnreadable(f"unreadable: {exc.strerror or exc}") from None


class YAMLBoundError(yaml.MarkedYAMLError):
    """A YAML text past one of the loader's bounds; its ``problem_mark`` is where it crossed."""


class BoundedLoader(yaml.SafeLoader):
    """``yaml.SafeLoader`` (the same values for every text it accepts) that raises
    :class:`YAMLBoundError` for nesting deeper than :data:`~bounded.MAX_DEPTH` or a document of more
    than :data:`~bounded.MAX_VALUES` values."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0  # collections open around the node being composed: the root's is 0
        self._measures: dict[int, tuple[int, int]] = {}  # id(collection): its values and levels, aliases expanded

    def fetch_flow_collection_start(self, TokenClass: Any) -> None:
        """Refuse the flow collection past the limit as the scanner reaches it, before the scanner's
        per-token work over every open flow level grows with it."""
        if self.flow_level >= MAX_DEPTH:
            raise YAMLBoundError(problem=too_deep(), problem_mark=self.get_mark())
        super().fetch_flow_collection_start(TokenClass)

    def compose_sequence_node(self, anchor: Any) -> SequenceNode:
        return self._bounded(super().compose_sequence_node, anchor)

    def compose_mapping_node(self, anchor: Any) -> MappingNode:
        return self._bounded(super().compose_mapping_node, anchor)

    def _bounded(self, compose: Callable[[Any], _Collection], anchor: Any) -> _Collection:
        """Compose a collection (scalars cost nothing more), refusing it past the depth as its start
        is reached, then count its values and levels from its children's: a scalar is one value and
        no level, an alias the anchored collection, counted when it was composed."""
        if self._depth >= MAX_DEPTH:
            raise YAMLBoundError(problem=too_deep(), problem_mark=self.current_event.start_mark)
        self._depth += 1
        node = compose(anchor)
        self._depth -= 1
        below = [self._measures.get(id(child), _SCALAR) for child in _children(node)]
        values, levels = 1 + sum(values for values, _ in below), 1 + max((levels for _, levels in below), default=0)
        if values > MAX_VALUES:
            raise YAMLBoundError(problem=too_many(MAX_VALUES), problem_mark=node.start_mark)
        if self._depth + levels > MAX_DEPTH:  # through an alias: a collection inside is refused above
            raise YAMLBoundError(problem=too_deep(), problem_mark=node.start_mark)
        self._measures[id(node)] = (values, levels)
        return node

    def construct_yaml_int(self, node: Any) -> int:
        """PyYAML's integer, or :class:`YAMLBoundError` for one of more digits than Python reads or
        writes as text (4,300 by default: ``int()``'s ``ValueError`` PyYAML lets through, and a hex
        or sexagesimal integer that long, which no message, schema check or JSON writer could show)."""
        try:
            value = int(super().construct_yaml_int(node))
            str(value)
            return value
        except ValueError:
            raise YAMLBoundError(problem=f"an integer of more than {sys.get_int_max_str_digits()} digits",
                                 problem_mark=node.start_mark) from None


BoundedLoader.add_constructor("tag:yaml.org,2002:int", BoundedLoader.construct_yaml_int)


_SCALAR = (1, 0)  # a scalar's values and levels


def _children(node: Node) -> list[Node]:
    """A collection's nodes: a mapping's keys and values, a sequence's items."""
    if isinstance(node, MappingNode):
        return [child for pair in node.value for child in pair]
    return list(node.value)


def load_yaml(text: str, loader: type[BoundedLoader] = BoundedLoader) -> Any:
    """The value of the YAML ``text`` (``yaml.safe_load``'s), or :class:`yaml.YAMLError`, a
    :class:`YAMLBoundError` for a text past the loader's bounds or longer than any file read whole
    may be (a text from elsewhere: a run's recorded manifest), refused before it is scanned."""
    if len(text) > MAX_DOCUMENT_BYTES:
        raise YAMLBoundError(problem=f"longer than {MAX_DOCUMENT_BYTES // 1_000_000} MB")
    return yaml.load(text, Loader=loader)


def parse_document(text: str, *, is_json: bool, loader: type[BoundedLoader] = BoundedLoader) -> tuple[Any, str | None]:
    """``(value, None)``, or ``(None, problem)`` in one line: ``text`` read as strict, bounded JSON
    (:func:`~bounded.json_problem`) or as YAML by ``loader``."""
    if is_json:
        return json_problem(text)
    try:
        return load_yaml(text, loader), None
    except yaml.YAMLError as exc:
        return None, yaml_problem(exc)


def yaml_problem(exc: yaml.YAMLError) -> str:
    """``invalid YAML on line N: what``, one line (PyYAML's own text spans several, with a snippet)."""
    mark = getattr(exc, "problem_mark", None)
    where = f" on line {mark.line + 1}" if mark else ""
    return f"invalid YAML{where}: {getattr(exc, 'problem', None) or str(exc).splitlines()[0]}"
