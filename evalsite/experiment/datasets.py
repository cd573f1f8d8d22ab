"""Load dataset files into rows, check their shapes, and give items and datasets their identity.

Formats by extension: ``.jsonl``/``.ndjson`` (one object per non-blank line), ``.json`` (an array
of objects), ``.csv`` (header row; Python's csv dialect, strict about quotes), ``.parquet``, and
any other text file (one row ``{"text": line}`` per non-blank line). JSON is read strictly and
bounded (:mod:`evalsite.experiment.bounded`: a key given twice, nesting deeper than 100 levels
and lone surrogates are errors). Every problem names the file and the line (or element) it is on.

Identity: an item's ``sha`` is the sha256 of its row as canonical JSON (sorted keys), with
separate hashes of its input side (everything but the expected answer) and its expected side, so
an edited ground truth can be told from a changed question. A dataset's id is
``<name>@<first 12 hex of the sha256 over its item hashes in order>``: one changed byte of
content is a new dataset.
"""

from __future__ import annotations

import csv
import io
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from itertools import chain
from pathlib import Path
from typing import Any, TypeGuard

from evalsite.errors import DatasetError, shortened
from evalsite.experiment.bounded import json_problem
from evalsite.experiment.turns import TurnsError, normalise_turns
from evalsite.jsonshape import JSONObject
from evalsite.runlog.hashing import plain_json, sha256_json, sha256_of_plain, sha256_text
from evalsite.runlog.rows import is_critical

EXPECTED_FIELD = "expected"
PREFERENCE_FIELDS = ("chosen", "rejected")
DATASET_SUFFIXES = (".jsonl", ".ndjson", ".json", ".csv", ".parquet", ".txt")
MESSAGE_ROLES = ("system", "user", "assistant", "tool", "developer")
#: The longest item id a dataset row may give (its ``id``): ids name pages, anchors and rows all over
#: the site and the run logs, so three rows with megabyte ids once made a 20 MB site.
MAX_ITEM_ID_CHARS = 256


@dataclass(frozen=True)
class Item:
    """One dataset row with its identity."""

    item_id: str
    index: int
    row: JSONObject
    sha: str
    input_sha: str
    expected_sha: str


#: an item's sha and its input and expected sides' (:func:`row_hashes`)
RowHashes = tuple[str, str, str]


@dataclass(frozen=True)
class SourceRow:
    """A row and where it stands in its file (``line 4``, ``element 3``, ``row 2``)."""

    row: JSONObject
    where: str


@dataclass(frozen=True)
class Dataset:
    path: Path
    name: str
    items: list[Item]

    @property
    def dataset_id(self) -> str:
        return dataset_id(self.name, self.items)


def load_rows(path: str | Path) -> list[JSONObject]:
    """Read a dataset file into a list of row dicts, by extension."""
    return [source.row for source in read_source_rows(path)]


def read_source_rows(path: str | Path) -> list[SourceRow]:
    """Read a dataset file into rows that remember their line (or element) for error messages."""
    path = Path(path)
    try:
        found = path.is_file()
    except OSError as exc:  # a name too long for the file system, say
        raise DatasetError(f"{path}: cannot read the dataset file: {exc.strerror}") from None
    if not found:
        raise DatasetError(f"{path}: dataset file not found")
    suffix = path.suffix.lower()
    if suffix == ".parquet":
        return _load_parquet(path)
    text = _read_text(path)
    if suffix in (".jsonl", ".ndjson"):
        return _parse_jsonl(path, text)
    if suffix == ".json":
        return _parse_json_array(path, text)
    if suffix == ".csv":
        return _parse_csv(path, text)
    return [
        SourceRow({"text": line}, f"line {number}")
        for number, line in _numbered_lines(text)
        if line.strip()
    ]


def _read_text(path: Path) -> str:
    """The file's text with its line ends untouched (CSV fields may hold ``\\r\\n``)."""
    try:
        return path.read_bytes().decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise DatasetError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None


def _numbered_lines(text: str) -> Iterator[tuple[int, str]]:
    """Lines split on ``\\n`` only (a JSON string may hold U+2028), numbered from 1."""
    for number, line in enumerate(text.split("\n"), start=1):
        yield number, line.removesuffix("\r")


def _parse_jsonl(path: Path, text: str) -> list[SourceRow]:
    rows = []
    for number, line in _numbered_lines(text):
        if not line.strip():
            continue
        row, problem = json_problem(line, number)
        if problem is not None:
            raise DatasetError(f"{path}: {problem}")
        if not isinstance(row, dict):
            raise DatasetError(f"{path}: line {number} is {_a(row)}, expected an object")
        rows.append(SourceRow(row, f"line {number}"))
    return rows


def _parse_json_array(path: Path, text: str) -> list[SourceRow]:
    data, problem = json_problem(text)
    if problem is not None:
        raise DatasetError(f"{path}: {problem}")
    if not isinstance(data, list):
        raise DatasetError(f"{path}: a .json dataset must be an array of objects, got {_a(data)}")
    rows = []
    for index, row in enumerate(data):
        if not isinstance(row, dict):
            raise DatasetError(f"{path}: element {index} is {_a(row)}, expected an object")
        rows.append(SourceRow(row, f"element {index}"))
    return rows


def _parse_csv(path: Path, text: str) -> list[SourceRow]:
    """Header row, then one row per record; short records are padded with empty strings.

    A blank line is no record; a record whose fields are all empty (``,,`` or ``""``) is a row.
    """
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    rows = []
    previous_end = 0
    try:
        header = next(reader, None)
        if header is None:
            return []
        _check_header(path, header)
        previous_end = reader.line_num
        for record in reader:
            start, previous_end = previous_end + 1, reader.line_num
            if not record:
                continue
            if len(record) > len(header):
                raise DatasetError(
                    f"{path}: line {start} has {len(record)} fields but the header has {len(header)}"
                )
            padded = record + [""] * (len(header) - len(record))
            rows.append(SourceRow(dict(zip(header, padded)), f"line {start}"))
    except csv.Error as exc:
        raise DatasetError(f"{path}: invalid CSV in the record starting on line {previous_end + 1}: {csv_reason(exc)}") from None
    return rows


def csv_reason(exc: csv.Error) -> str:
    """Python's csv messages, said plainly (strict mode: a stray or unclosed quote is an error,
    not records silently merged into one)."""
    message = str(exc)
    if message == "unexpected end of data":
        return "a quoted field is never closed (its opening quote swallows every line after it)"
    if message.startswith("field larger than field limit"):
        return (f"a field is longer than Python's csv module reads ({csv.field_size_limit():,} characters); "
                "write such long values as JSON Lines")
    return f"{message} (quote a field that holds a quote, and double the quotes inside it)"


def _check_header(path: Path, header: list[str]) -> None:
    for column, name in enumerate(header, start=1):
        if not name:
            raise DatasetError(f"{path}: line 1: column {column} of the header has no name")
    repeated = [name for name, count in Counter(header).items() if count > 1]
    if repeated:
        raise DatasetError(f"{path}: line 1: the header names column {repeated[0]!r} more than once")


def _load_parquet(path: Path) -> list[SourceRow]:
    import pyarrow.parquet as pq

    try:
        table = pq.read_table(path)
    except Exception as exc:  # pyarrow raises several unrelated types for a bad file
        raise DatasetError(f"{path}: unreadable Parquet file: {exc}") from None
    return [SourceRow(row, f"row {index}") for index, row in enumerate(table.to_pylist())]


def _a(value: object) -> str:
    """``a string``, ``an array``…: a JSON value's type for a message."""
    name = {dict: "object", list: "array", str: "string", bool: "boolean", type(None): "null"}.get(
        type(value), "number"
    )
    return f"an {name}" if name[0] in "aeiou" else f"a {name}"


def eval_row(raw: JSONObject, expected_field: str = EXPECTED_FIELD) -> JSONObject:
    """The row the runner sees: with ``expected_field`` set, that field becomes ``expected``."""
    if expected_field == EXPECTED_FIELD:
        return raw
    row = {key: value for key, value in raw.items() if key != EXPECTED_FIELD}
    if expected_field in raw:
        row[EXPECTED_FIELD] = raw[expected_field]
    return row


def row_problems(row: JSONObject) -> list[str]:
    """What makes an eval row unusable (empty when the row is fine)."""
    if all(field in row for field in PREFERENCE_FIELDS):
        return [
            "a preference row (chosen/rejected) ranks two answers and has no expected output "
            "to score; rewrite it as input + expected"
        ]
    problems = []
    if "id" in row and not _usable_id(row["id"]):
        problems.append(f"'id' must be a non-empty string or a whole number, got {_short(row['id'])}")
    elif "id" in row and _too_long(row["id"]):
        problems.append(f"'id' is {_id_length(row['id'])} long; an item id is at most {MAX_ITEM_ID_CHARS} characters")
    if "input" in row and "turns" in row:
        problems.append("has both 'input' and 'turns'; a row is a single input or a replayed conversation")
    if "input" in row and not isinstance(row["input"], str):
        problems += _messages_problems(row["input"], "input", allow_strings=False)
    if "turns" in row:
        problems += _turns_problems(row["turns"], row.get(EXPECTED_FIELD))
    if "metadata" in row:
        problems += _metadata_problems(row["metadata"])
    return problems


def _usable_id(value: object) -> TypeGuard[int | str]:
    if isinstance(value, bool):
        return False
    return isinstance(value, int) or (isinstance(value, str) and value != "")


def _too_long(item_id: int | str) -> bool:
    """Longer than :data:`MAX_ITEM_ID_CHARS` (a whole number is measured without writing its digits,
    which Python refuses past 4,300)."""
    return abs(item_id) >= 10 ** MAX_ITEM_ID_CHARS if isinstance(item_id, int) else len(item_id) > MAX_ITEM_ID_CHARS


def _id_length(item_id: int | str) -> str:
    return f"a number of more than {MAX_ITEM_ID_CHARS} digits" if isinstance(item_id, int) else f"{len(item_id):,} characters"


def _messages_problems(value: object, field: str, *, allow_strings: bool) -> list[str]:
    wanted = "a list of strings or messages" if allow_strings else "a string or a list of messages"
    if not isinstance(value, list):
        return [f"'{field}' must be {wanted}, got {_a(value)}"]
    if not value:
        return [f"'{field}' is an empty list"]
    for index, message in enumerate(value):
        if allow_strings and isinstance(message, str):
            continue
        if not isinstance(message, dict) or not isinstance(message.get("role"), str) or "content" not in message:
            return [f"'{field}[{index}]' must be a message {{role, content}}, got {_short(message)}"]
        if message["role"] not in MESSAGE_ROLES:
            return [f"'{field}[{index}].role' must be one of {', '.join(MESSAGE_ROLES)}, got {message['role']!r}"]
    return []


def _short(value: object) -> str:
    return shortened(repr(value))


def user_turns(turns: list[str | JSONObject]) -> list[str | JSONObject]:
    """The turns a target answers: plain strings and ``role: user`` messages."""
    return [turn for turn in turns if isinstance(turn, str) or turn.get("role") == "user"]


def _turns_problems(turns: object, expected: object) -> list[str]:
    problems = _messages_problems(turns, "turns", allow_strings=True)
    if problems or not isinstance(turns, list):  # a list whenever it has no problems
        return problems
    asked = len(user_turns(turns))
    if asked == 0:
        return ["'turns' has no user turn to answer"]
    if isinstance(expected, list) and len(expected) != asked:
        return [f"'expected' has {len(expected)} entries but 'turns' has {asked} user turns (one each)"]
    try:
        normalise_turns(turns)  # the runner's own reading: a row this passes is a row it replays
    except TurnsError as exc:
        return [str(exc)]
    return []


def _metadata_problems(metadata: object) -> list[str]:
    if not isinstance(metadata, dict):
        return [f"'metadata' must be an object, got {_a(metadata)}"]
    problems = []
    if "critical" in metadata and not isinstance(metadata["critical"], bool):
        problems.append(f"'metadata.critical' must be true or false, got {metadata['critical']!r}")
    if "split" in metadata and not isinstance(metadata["split"], str):
        problems.append(f"'metadata.split' must be a string, got {metadata['split']!r}")
    if "group" in metadata and not isinstance(metadata["group"], (str, int)):
        problems.append(f"'metadata.group' must be a string or a whole number, got {metadata['group']!r}")
    return problems


def dataset_problems(rows: list[SourceRow], source: str, expected_field: str = EXPECTED_FIELD) -> list[str]:
    """Every problem of every row (shapes, ids, duplicate ids), each naming its line."""
    raws = [source_row.row for source_row in rows]
    problems = [] if _surely_fine(raws) else _each_row_problems(rows, source, expected_field)
    if expected_field != EXPECTED_FIELD and rows and not any(expected_field in raw for raw in raws):
        fields = sorted({key for raw in raws for key in raw})
        problems.append(
            f"{source}: dataset.expected_field {expected_field!r} is in no row (fields: {', '.join(fields)})"
        )
    return problems


def _surely_fine(raws: list[JSONObject]) -> bool:
    """Whether no row can have a problem, checked a column at a time (a fraction of the per-row
    checks' cost): no row holds ``turns`` or ``metadata``, no two preference fields are both in use,
    every ``input`` is a string, and either no row has an ``id`` or every row's is distinct
    non-empty text of at most :data:`MAX_ITEM_ID_CHARS`. Other datasets are checked row by row."""
    fields = set().union(*raws)
    if "turns" in fields or "metadata" in fields or fields.issuperset(PREFERENCE_FIELDS):
        return False
    if "input" in fields and {type(raw.get("input", "")) for raw in raws} != {str}:
        return False
    if "id" not in fields:
        return True
    ids: list[Any] = [raw.get("id") for raw in raws]  # every one a string, once its types are checked
    return (set(map(type, ids)) == {str} and min(map(len, ids)) > 0 and max(map(len, ids)) <= MAX_ITEM_ID_CHARS
            and len(set(ids)) == len(ids))


def _each_row_problems(rows: list[SourceRow], source: str, expected_field: str) -> list[str]:
    problems = []
    first_seen: dict[str, str] = {}
    for index, source_row in enumerate(rows):
        row = eval_row(source_row.row, expected_field)
        problems += [f"{source}: {source_row.where}: {problem}" for problem in row_problems(row)]
        if _usable_id(row.get("id")) and _too_long(row["id"]):
            continue  # refused above; too long to compare (or, as a number, to write out)
        item_id = _item_id(row, index)
        if item_id in first_seen:
            problems.append(
                f"{source}: duplicate item id {item_id!r} on {first_seen[item_id]} and {source_row.where}"
                + ("" if "id" in row else f" (the row there has no 'id', so its index {index} is its id)")
            )
        first_seen.setdefault(item_id, source_row.where)
    return problems


def _item_id(row: JSONObject, index: int) -> str:
    return str(row["id"]) if row.get("id") is not None else str(index)


def make_items(rows: list[SourceRow], source: str, expected_field: str = EXPECTED_FIELD) -> list[Item]:
    """Check every row and give each its item id (its ``id`` field, else its index) and hashes."""
    _refuse(dataset_problems(rows, source, expected_field))
    raws = [source_row.row for source_row in rows]
    return _items(raws, expected_field, row_hashes(raws, expected_field))


def _refuse(problems: list[str]) -> None:
    if problems:
        more = f" (and {len(problems) - 1} more; `evalsite validate` lists them all)" if len(problems) > 1 else ""
        raise DatasetError(problems[0] + more)


def _items(raws: list[JSONObject], expected_field: str, hashes: list[RowHashes]) -> list[Item]:
    """Checked rows' items from their hashes (:func:`row_hashes`), a column at a time."""
    rows = raws if expected_field == EXPECTED_FIELD else [eval_row(raw, expected_field) for raw in raws]
    item_ids = [str(index) if row.get("id") is None else str(row["id"]) for index, row in enumerate(rows)]
    return list(map(_item, item_ids, range(len(rows)), rows, *zip(*hashes)))  # (no tuple unpacked per item)


def _item(item_id: str, index: int, row: JSONObject, sha: str, input_sha: str, expected_sha: str) -> Item:
    """``Item(item_id, index, row, sha, input_sha, expected_sha)`` as its frozen dataclass
    ``__init__`` makes it (``object.__setattr__`` a field, in order, so the fields keep the class's
    shared layout and memory), without looking ``__setattr__`` up again for each field: a third
    of the cost of making 100,000 items, an import's, on its serial path (tests/test_datasets.py
    checks every field). Setting the object's ``__dict__`` at once would be faster still but
    gives each item a dict of its own, ~70 bytes more an item."""
    item = _new(Item)
    _set(item, "item_id", item_id)
    _set(item, "index", index)
    _set(item, "row", row)
    _set(item, "sha", sha)
    _set(item, "input_sha", input_sha)
    _set(item, "expected_sha", expected_sha)
    return item


def row_hashes(raws: list[JSONObject], expected_field: str = EXPECTED_FIELD) -> list[RowHashes]:
    """Each row's sha and its input and expected sides' (:class:`Item`'s three hashes): a row's
    alone, whatever rows come before it, so a long list may be hashed in parts."""
    plain = _all_plain(raws)
    return [_hashes(raw, expected_field, plain or plain_json(raw)) for raw in raws]


_FLAT_PLAIN = {str, int, bool, type(None)}
_NO_EXPECTED_SHA = sha256_json({EXPECTED_FIELD: None})  # the expected side of every row without one
_new, _set = object.__new__, object.__setattr__


def _all_plain(raws: list[JSONObject]) -> bool:
    """:func:`~evalsite.runlog.hashing.plain_json` of every row at once when no row holds a list or
    an object (false otherwise: each row is then walked by itself)."""
    return (set(map(type, raws)) <= {dict} and set(map(type, set().union(*raws))) <= {str}
            and set(map(type, chain.from_iterable(map(dict.values, raws)))) <= _FLAT_PLAIN)


def _hashes(raw: JSONObject, expected_field: str, plain: bool) -> RowHashes:
    """A row without an expected value is its own input side."""
    digest = sha256_of_plain if plain else sha256_json  # the same hashes (both sides are parts of raw)
    sha = digest(raw)
    if EXPECTED_FIELD not in raw and expected_field not in raw:
        return sha, sha, _NO_EXPECTED_SHA
    input_side = dict(raw)
    input_side.pop(EXPECTED_FIELD, None)
    input_side.pop(expected_field, None)
    return sha, digest(input_side), digest({EXPECTED_FIELD: raw.get(expected_field)})


def dataset_id(name: str, items: list[Item]) -> str:
    """``<name>@<first 12 hex of the hash over all item hashes in order>``."""
    return f"{name}@{sha256_text(''.join(item.sha for item in items))[:12]}"


def load_dataset(path: str | Path, *, name: str | None = None, expected_field: str = EXPECTED_FIELD) -> Dataset:
    """Load, check and identify a whole dataset file."""
    path = Path(path)
    items = make_items(read_source_rows(path), str(path), expected_field)
    return Dataset(path=path, name=name or path.stem, items=items)


def item_identity(rows: list[JSONObject], source: str,
                  hashed: Callable[[list[JSONObject]], list[RowHashes]] = row_hashes) -> list[Item]:
    """Items for rows held in memory (inline rows, imported results), named ``rows[i]`` in messages
    (made only when a row may have a problem). ``hashed``: :func:`row_hashes`, or the same hashes
    computed in parts (an import's, in two processes), once every row has passed its checks."""
    if not _surely_fine(rows):
        _refuse(dataset_problems([SourceRow(row, f"rows[{index}]") for index, row in enumerate(rows)], source))
    return _items(rows, EXPECTED_FIELD, hashed(rows))


def inline_dataset(rows: list[JSONObject], *, name: str, source: Path) -> Dataset:
    """A dataset from a manifest's inline ``rows``."""
    return Dataset(path=source, name=name, items=item_identity(rows, str(source)))


def item_split(item: Item) -> str | None:
    metadata = item.row.get("metadata")
    return metadata.get("split") if isinstance(metadata, dict) else None


def select_items(items: list[Item], *, split: str | list[str] | None = None, limit: int | None = None) -> list[Item]:
    """The items whose ``metadata.split`` is in ``split`` (if given), then the first ``limit``."""
    if split is not None:
        wanted = {split} if isinstance(split, str) else set(split)
        items = [item for item in items if item_split(item) in wanted]
    return items[:limit] if limit is not None else items


@dataclass(frozen=True)
class DatasetSummary:
    """What ``evalsite dataset show`` prints."""

    path: str
    dataset_id: str
    items: int
    fields: dict[str, int]
    shapes: dict[str, int]
    with_expected: int
    critical: int
    splits: dict[str, int]


def row_shape(row: JSONObject) -> str:
    """``input``, ``turns``, ``text`` (one line of a text file) or ``fields`` (for a prompt template)."""
    return next((shape for shape in ("input", "turns", "text") if shape in row), "fields")


def describe_dataset(dataset: Dataset) -> DatasetSummary:
    rows = [item.row for item in dataset.items]
    return DatasetSummary(
        path=str(dataset.path),
        dataset_id=dataset.dataset_id,
        items=len(rows),
        fields=dict(sorted(Counter(key for row in rows for key in row).items())),
        shapes=dict(sorted(Counter(row_shape(row) for row in rows).items())),
        with_expected=sum(EXPECTED_FIELD in row for row in rows),
        critical=sum(is_critical(row) for row in rows),
        splits=dict(sorted(Counter(s for s in map(item_split, dataset.items) if s is not None).items())),
    )
