"""The rows of a dataset's item index (``items/<dataset>/index.html``) as data scripts
(``data/items/<dataset>/index-<n>.js``, :data:`INDEX_PART_ROWS` rows each).

A row is ``[item id, anchor or null, bucket, input snippet or null, cells]``, one cell per column
(the newest run of each arm on the dataset): ``[score, passed, tint]`` from that run's
:class:`~evalsite.site.matrixdata.MatrixPart` (its mean score over the repeats, 1/0/null verdict
and the matrix's tint index), or null where the run lacks the item. Rows are in natural item
order; ``static/itemindex.js`` filters, searches and pages them in the browser. The page itself
holds no row, so a dataset of 100,000 items gives a small page and scripts of bounded size.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from evalsite.analysis.case_columns import CaseColumns, natural_ids
from evalsite.analysis.case_texts import CaseTexts
from evalsite.site import paths
from evalsite.site.casedata import json_script
from evalsite.site.matrixdata import MatrixPart
from evalsite.site.safe_text import display

#: Rows per data script of an item index.
INDEX_PART_ROWS = 5000
#: Characters of an item's input the index shows.
SNIPPET_CHARS = 160


def input_snippets(columns: CaseColumns, texts: CaseTexts) -> dict[str, str]:
    """Item id → the start of its input (its first turn for a conversation) on one line, from the
    item's first case with one: what the matrix part keeps for the index."""
    found: dict[str, str] = {}
    item_ids, inputs = columns.item_ids, texts.input
    for row, code in enumerate(columns.item.tolist()):
        item_id = item_ids[code]
        if item_id in found:
            continue
        value = inputs[row]
        if type(value) is str:  # the common case: display's text and cut, without its record (~1 µs of ~5)
            text, cut = value[:SNIPPET_CHARS], len(value) > SNIPPET_CHARS
        else:
            turns = texts.whole(row, "turns")
            shown = display(turns[0] if value is None and isinstance(turns, list) and turns else value, SNIPPET_CHARS)
            if shown is None:
                continue
            text, cut = shown.text, bool(shown.omitted)
        found[item_id] = " ".join(text.split()) + ("…" if cut else "")
    return found


def index_scripts(dataset_id: str, parts: Sequence[MatrixPart], *, redact: bool) -> dict[str, bytes]:
    """The item index's data scripts (path → bytes, at least one) over ``parts`` (one per column);
    an item's snippet comes from the first column that has one (none when redacting)."""
    rows = _rows_of_shared_items(parts, redact=redact) if parts else []
    if rows is None:
        rows = _rows(parts, redact=redact)
    count = max(1, -(-len(rows) // INDEX_PART_ROWS))
    return {paths.item_index_data(dataset_id, n): json_script(
        paths.item_index_data(dataset_id, n), "[" + ",".join(rows[n * INDEX_PART_ROWS:(n + 1) * INDEX_PART_ROWS]) + "]")
        for n in range(count)}


def _rows_of_shared_items(parts: Sequence[MatrixPart], *, redact: bool) -> list[str] | None:
    """The rows when every column holds the same items (the usual case: each arm's newest run of a
    dataset), joined from the parts' kept texts in their own (natural) order, as :func:`_rows`
    writes them; None when the columns' items differ."""
    first = parts[0].column.item_ids
    if any(part.column.item_ids != first for part in parts):
        return None
    cells = ["],[".join(heads) for heads in zip(*(part.heads for part in parts))]
    return [f"[{start},{snippet},[[{shown}]]]" for start, snippet, shown in zip(parts[0].items, _snippets(parts, redact), cells)]


def _snippets(parts: Sequence[MatrixPart], redact: bool) -> list[str]:
    """Each item's snippet, from the first column that has one (runs asked the same way share one list)."""
    if redact:
        return ["null"] * len(parts[0].snippets)
    distinct = list({id(part.snippets): part.snippets for part in parts}.values())
    if len(distinct) == 1:
        return distinct[0]
    return [next((shown for shown in found if shown != "null"), "null") for found in zip(*distinct)]


def _rows(parts: Sequence[MatrixPart], *, redact: bool) -> list[str]:
    """The rows over columns of different items: the union of their items in natural order."""
    cells = [dict(zip(part.column.item_ids, part.heads)) for part in parts]
    snippets: dict[str, str] = {}
    for part in [] if redact else parts:
        for item_id, shown in zip(part.column.item_ids, part.snippets):
            if shown != "null":
                snippets.setdefault(item_id, shown)
    item_ids = natural_ids(item_id for column in cells for item_id in column)
    rows = []
    for item_id in item_ids:
        anchor = paths.item_anchor(item_id)
        row = [json.dumps(value, ensure_ascii=False) for value in
               (item_id, None if anchor == f"item-{item_id}" else anchor, paths.item_bucket(item_id))]
        row.append(snippets.get(item_id, "null"))
        shown = ",".join("null" if column.get(item_id) is None else f"[{column[item_id]}]" for column in cells)
        rows.append(f"[{','.join(row)},[{shown}]]")
    return rows
