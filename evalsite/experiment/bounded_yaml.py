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

from typing import Any

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode

from evalsite.experiment.bounded import MAX_DEPTH, MAX_VALUES, json_problem, too_deep, too_many


class YAMLBoundError(yaml.MarkedYAMLError):
    """A YAML text past one of the loader's bounds; its ``problem_mark`` is where it crossed."""


class BoundedLoader(yaml.SafeLoader):
    """``yaml.SafeLoader`` (the same values for every text it accepts) that raises
    :class:`YAMLBoundError` for nesting deeper than :data:`~bounded.MAX_DEPTH` or a document of more
    than :data:`~bounded.MAX_VALUES` values."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0  # the depth of the node being composed: the root's is 0
        self._measures: dict[int, tuple[int, int]] = {}  # id(collection): its values and levels, aliases expanded

    def fetch_flow_collection_start(self, TokenClass: Any) -> None:
        """Refuse the flow collection past the limit as the scanner reaches it, before the scanner's
        per-token work over every open flow level grows with it."""
        if self.flow_level >= MAX_DEPTH:
            raise YAMLBoundError(problem=too_deep(), problem_mark=self.get_mark())
        super().fetch_flow_collection_start(TokenClass)

    def compose_node(self, parent: Node | None, index: int) -> Node | None:
        collection = self.check_event(yaml.CollectionStartEvent)  # peeks: the event is current_event
        where: yaml.Mark = self.current_event.start_mark  # the node as written here: an alias is its use
        if collection and self._depth >= MAX_DEPTH:
            raise YAMLBoundError(problem=too_deep(), problem_mark=where)
        self._depth += 1
        node = super().compose_node(parent, index)
        self._depth -= 1
        if node is not None:
            self._measure(node, where)
        return node

    def _measure(self, node: Node, where: yaml.Mark) -> None:
        """Count a collection's values and levels from its children's (an alias is the anchored
        node, measured already; a scalar is one value and no level), refusing a collection too
        large, or an alias that reaches too deep."""
        if isinstance(node, ScalarNode):
            return
        measured = self._measures.get(id(node))
        if measured is None:
            below = [self._measures.get(id(child), _SCALAR) for child in _children(node)]
            measured = (1 + sum(values for values, _ in below), 1 + max((levels for _, levels in below), default=0))
            if measured[0] > MAX_VALUES:
                raise YAMLBoundError(problem=too_many(MAX_VALUES), problem_mark=where)
            self._measures[id(node)] = measured
        if self._depth + measured[1] > MAX_DEPTH:
            raise YAMLBoundError(problem=too_deep(), problem_mark=where)


_SCALAR = (1, 0)  # a scalar's values and levels


def _children(node: Node) -> list[Node]:
    """A collection's nodes: a mapping's keys and values, a sequence's items."""
    if isinstance(node, MappingNode):
        return [child for pair in node.value for child in pair]
    return list(node.value)


def load_yaml(text: str, loader: type[BoundedLoader] = BoundedLoader) -> Any:
    """The value of the YAML ``text`` (``yaml.safe_load``'s), or :class:`yaml.YAMLError`, a
    :class:`YAMLBoundError` for a text past the loader's bounds."""
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
