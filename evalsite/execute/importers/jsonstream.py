"""Read large JSON and JSON Lines files without holding them whole.

:class:`JsonArrayStream` walks one JSON document and yields the elements of the array at a key
path (``results.results`` in a promptfoo file, ``samples`` in an Inspect log) one at a time;
everything else in the document is decoded normally and kept in ``rest``. Only the current
element and a read buffer are in memory, so a 1 GB log costs about as much as its largest
element. Values are decoded by the standard library's C decoder (``raw_decode``), except the
array's elements in an indented document (promptfoo's and Inspect's are): a run of them, up to
64 KiB of text, is cut at the last line that closes one at their indentation and decoded by one
orjson call (:meth:`JsonArrayStream._run_of_elements`); an element the run cannot take is cut
alone at its first such line (:meth:`JsonArrayStream._element`). This module only steps over the
structure around them.

Why not decode the whole document with orjson: a 200,000-case promptfoo file (1.1 GB) took
11.5 s of CPU and 5.6 GB of memory to decode at once (bench/importers.py's file, measured
alone), where the whole streamed import peaks under 400 MB.

Why not ijson (bench/jsonstream.py, a 20,000-case promptfoo file of 112 MB, whole-process medians
of 5 runs): this reader takes 0.72 s of CPU and peaks at 63 MB (most of it the interpreter and the
CLI's imports); ``ijson.items`` on its C backend takes 0.64 s and 12 MB but yields the array only,
and the importers also need the rest of the document; the same contract built from
``ijson.parse`` events (array streamed, rest kept) takes 3.46 s, 4.8 times as long. A dependency
that is no faster for what is needed is not worth adding.

:class:`JsonLines` reads one object per line, ignoring a torn last line (a writer that was
killed mid-line) and reporting any other bad line by number.

A line or an element is decoded by orjson (2-4x the standard decoder's speed) only when orjson
surely reads it as the standard decoder does (:func:`orjson_value`); anything else (text orjson
refuses: NaN, 1e400, a lone surrogate, deep nesting, bad JSON; or a run of 19 digits, which might
be an integer past 64 bits that orjson reads as a float) is decoded by the standard library,
which also words every error as before.
"""

from __future__ import annotations

import codecs
import json
import re
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import IO, Any, Protocol

from evalsite.errors import SourceError
from evalsite.jsonshape import JSONObject
from evalsite.runlog.fields import json_kind
from evalsite.runlog.jsonread import ORJSON_RISKY_DIGITS, UNSURE, has_digit_run, orjson_value


def json_problem(exc: ValueError) -> str:
    """Why a text is not JSON that can be imported: the decoder's message, or, for the one
    ``ValueError`` json raises on valid syntax, an integer past Python's 4,300 digits."""
    if isinstance(exc, (json.JSONDecodeError, UnicodeDecodeError)):
        return str(exc)
    return "an integer of more than 4300 digits"

CHUNK_CHARS = 1 << 20
#: how much text of an array's elements one orjson call reads (see JsonArrayStream._run_of_elements):
#: a promptfoo file's decodes in 12.5 µs an element at 64 KiB, 14.2 at 1 MiB (the CPU's caches)
RUN_CHARS = 1 << 16
#: why a value the C decoder gave up on (``RecursionError``) is refused
TOO_DEEP = "nested too deeply to read (arrays or objects about 1,000 levels inside each other)"
_WHITESPACE = re.compile(r"[ \t\n\r]*")
_MAX_INDENTATION = 256  # an element further from its line's start is taken for not indented
_NEAR_END = 16  # a decode error this close to the buffer's end may just be a value cut by the chunk


class _EndOfFile(Exception):
    """The document ended where more was required."""


class RunShare(Protocol):
    """Who decodes each run of the array's elements (:meth:`JsonArrayStream._run_of_elements`),
    when two processes read one document (:mod:`evalsite.execute.importers.shared_reading`)."""

    def claim(self, number: int, start: int, end: int) -> list[Any] | None:
        """The values to yield for run ``number`` (the text from offset ``start`` to ``end``),
        given by the share, or None to decode the run here."""

    def decoded(self, values: list[Any] | None) -> None:
        """What decoding the run just claimed gave: its values, or None (read one element at a time)."""

    def finished(self) -> None:
        """The array has ended."""


class JsonArrayStream:
    """Iterate the array at ``keys`` in the JSON object stored at ``path``.

    After iteration, ``rest`` holds every other value of the document (nested objects on the
    key path keep their other keys) except those at the dotted paths in ``skip``, which are
    stepped over an element at a time (a copy of the whole dataset, say); ``found`` says
    whether the array was present, and ``truncated`` says the file ended inside the array: the
    elements before the cut were yielded and the iteration stopped without an error. A file
    that ends anywhere else, or that is not JSON, raises :class:`SourceError` naming the line.
    ``decode_run`` decodes a run of elements (:meth:`_run_of_elements`): :func:`orjson_value`, or
    a reader's own that gives the same or :data:`UNSURE` (promptfoo's keeps only the fields it reads).
    """

    def __init__(self, path: Path, keys: tuple[str, ...], label: str | None = None, skip: tuple[str, ...] = (),
                 share: RunShare | None = None, decode_run: Callable[[bytes], Any] = orjson_value):
        self.path = Path(path)
        self.share = share
        self.decode_run = decode_run
        self.keys = keys
        self.skip = {tuple(dotted.split(".")) for dotted in skip}
        self.label = label or str(path)
        self.rest: JSONObject = {}
        self.found = False
        self.truncated = False
        self._decoder = json.JSONDecoder()
        self._buffer = ""
        self._pos = 0
        self._dropped = 0  # characters consumed and dropped from the buffer
        self._eof = False
        self._in_array = False
        self._indented = True  # until an element shows otherwise (see _element)
        self._single_until = 0  # elements before this offset are read one at a time (see _run_of_elements)
        self._runs = 0  # runs cut so far in the array (their numbers for the share)

    def __iter__(self) -> Iterator[Any]:
        try:
            with open(self.path, encoding="utf-8-sig") as handle:
                self._handle = handle
                yield from self._document()
        except _EndOfFile:
            if not self._in_array:
                raise SourceError(f"{self.label}: the file ends in the middle of its JSON (truncated?)") from None
            self.truncated = True
        except UnicodeDecodeError as exc:
            raise SourceError(f"{self.label}: not UTF-8 text ({exc.reason})") from None

    def _document(self) -> Iterator[Any]:
        yield from self._object(self.rest, ())
        self._skip_whitespace()
        if self._pos < len(self._buffer):
            raise self._error("invalid JSON: extra data after the document")

    def _object(self, into: JSONObject, path: tuple[str, ...]) -> Iterator[Any]:
        self._expect("{", ".".join(path) or "the document", "an object")
        if self._peek() == "}":
            self._pos += 1
            return
        while True:
            self._skip_whitespace()
            if self._peek() != '"':
                raise self._error("invalid JSON: expected a quoted key")
            key = self._value()
            self._expect(":", key, "':'")
            inner = (*path, key)
            if inner == self.keys:
                self.found = True
                self._in_array = True
                yield from self._elements(".".join(inner))
                self._in_array = False
                if self.share is not None:
                    self.share.finished()
            elif inner == self.keys[: len(inner)] or (self._leads_to_skip(inner) and self._peek() == "{"):
                into[key] = {}
                yield from self._object(into[key], inner)
            elif inner in self.skip:
                self._step_over()
            else:
                into[key] = self._value()
            if self._one_of(",}") == "}":
                return

    def _leads_to_skip(self, path: tuple[str, ...]) -> bool:
        return any(skipped[: len(path)] == path and len(skipped) > len(path) for skipped in self.skip)

    def _elements(self, what: str) -> Iterator[Any]:
        self._expect("[", what, "an array")
        if self._peek() == "]":
            self._pos += 1
            return
        while True:
            run = self._run_of_elements()
            yield from (self._element(),) if run is None else run
            if self._one_of(",]") == "]":
                return

    def _run_of_elements(self) -> list[Any] | None:
        """The elements from here to the last line in the buffer that closes one at this element's
        indentation, decoded by one orjson call (the cut text in brackets), or none. Text that
        orjson reads whole as an array holds exactly those elements: a JSON parser decides left
        to right, so elements read from a prefix of the array end where they end in the whole.
        An element a call cannot take surely (a run of 19 digits, NaN, bad JSON, the cut past
        the array's end) sends the stream one element at a time (:meth:`_element`) up to where
        that cut ended. One call for a dozen promptfoo results instead of one each saves the
        cut, slice, encode and digit check per element (bench figures: docs/benchmarks.md).
        None: no run here. With a :class:`RunShare`, each run of the array is first offered to
        it, which may give its values (decoded elsewhere, or none: a run another process reads)."""
        if not self._indented or self._dropped + self._pos < self._single_until:
            return None
        self._skip_whitespace()
        closer = self._closing_line()  # before a fill, which drops the line's start
        if closer is None:
            return None
        if len(self._buffer) - self._pos < CHUNK_CHARS // 2:
            self._fill()
        end = self._buffer.rfind(closer, self._pos, self._pos + RUN_CHARS)
        if end < 0:
            return None
        end += len(closer)
        share = self.share if self._in_array else None
        if share is not None:
            claimed = share.claim(self._runs, self._dropped + self._pos, self._dropped + end)
            self._runs += 1
            if claimed is not None:
                self._pos = end
                return claimed
        values: list[Any] | object = self.decode_run(b"[" + self._buffer[self._pos : end].encode("utf-8") + b"]")
        if not isinstance(values, list):
            self._single_until = self._dropped + end
            values = None
        else:
            self._pos = end
        if share is not None:
            share.decoded(values)
        return values

    def _element(self) -> Any:
        """An array's element: in an indented document, the text up to the first line that closes
        it at its own indentation (no JSON string holds a line break), decoded by orjson when it
        surely reads it as the standard decoder does; anything else by :meth:`_value`. Text that
        orjson reads whole as one object or array is exactly the element, so a wrong cut only
        costs the attempt; after one (the element's true end elsewhere, no closing line within
        half a chunk, or an element not on a line of its own) the rest of the document is read by
        :meth:`_value` alone, so neither the search nor the buffer grows past what it needs."""
        self._skip_whitespace()
        closer = self._closing_line() if self._indented else None
        if closer is None:
            return self._value()
        end = self._buffer.find(closer, self._pos)
        if end < 0:  # past the buffer: a big element, or a cut that does not work here
            self._indented = len(self._buffer) - self._pos < CHUNK_CHARS // 2
            return self._value()
        end += len(closer)
        value = orjson_value(self._buffer[self._pos : end].encode("utf-8"))
        if value is not UNSURE:
            self._pos = end
            return value
        cut_at = self._dropped + end
        value = self._value()
        self._indented = self._dropped + self._pos == cut_at  # orjson refused what it holds, not the cut
        return value

    def _closing_line(self) -> str | None:
        """``"\n" + indentation + "}"`` for an object (``]`` for an array) that starts a line
        (None for an empty one, written on one line)."""
        pos, buffer = self._pos, self._buffer
        if pos >= len(buffer) or buffer[pos] not in "{[" or buffer.startswith(("{}", "[]"), pos):
            return None
        nearest = max(0, pos - _MAX_INDENTATION)
        start = buffer.rfind("\n", nearest, pos) + 1
        if start == 0:  # no line break just before: a long line, or the buffer starts close by
            self._indented = nearest == 0
            return None
        indentation = buffer[start:pos]
        if indentation.strip(" \t"):  # text before it on its line
            self._indented = False
            return None
        return "\n" + indentation + ("}" if buffer[pos] == "{" else "]")

    def _step_over(self) -> None:
        """Read past one value without keeping it; an array only one element at a time."""
        if self._peek() == "[":
            for _ in self._elements("a skipped array"):
                pass
        else:
            self._value()

    def _fill(self) -> bool:
        """Read more text, dropping what was consumed; grows geometrically for one big value."""
        if self._eof:
            return False
        chunk = self._handle.read(max(CHUNK_CHARS, len(self._buffer) - self._pos))
        if not chunk:
            self._eof = True
            return False
        self._dropped += self._pos
        self._buffer = self._buffer[self._pos :] + chunk
        self._pos = 0
        return True

    def _skip_whitespace(self) -> None:
        while True:
            blank = _WHITESPACE.match(self._buffer, self._pos)  # always matches: the pattern may match nothing
            self._pos = blank.end() if blank else self._pos
            if self._pos < len(self._buffer) or not self._fill():
                return

    def _peek(self) -> str:
        self._skip_whitespace()
        if self._pos >= len(self._buffer):
            raise _EndOfFile
        return self._buffer[self._pos]

    def _expect(self, char: str, what: str, description: str) -> None:
        if self._peek() != char:
            raise self._error(f"{what}: expected {description}")
        self._pos += 1

    def _one_of(self, chars: str) -> str:
        char = self._peek()
        if char not in chars:
            raise self._error(f"invalid JSON: expected {' or '.join(repr(c) for c in chars)}")
        self._pos += 1
        return char

    def _value(self) -> Any:
        self._skip_whitespace()
        while True:
            try:
                value, end = self._decoder.raw_decode(self._buffer, self._pos)
            except json.JSONDecodeError as exc:
                maybe_cut = exc.pos >= len(self._buffer) - _NEAR_END or exc.msg.startswith("Unterminated")
                if maybe_cut and self._fill():
                    continue
                if maybe_cut:
                    raise _EndOfFile from None
                raise self._error(f"invalid JSON: {exc.msg}", exc.pos) from None
            except RecursionError:
                raise self._error(TOO_DEEP) from None
            except ValueError as exc:
                raise self._error(f"invalid JSON: {json_problem(exc)}") from None
            if end > len(self._buffer) - _NEAR_END and self._fill():  # a number may go on ("0." "1e-" cut)
                continue
            self._pos = end
            return value

    def _error(self, message: str, pos: int | None = None) -> SourceError:
        return SourceError(f"{self.label}: line {self._line_at(self._pos if pos is None else pos)}: {message}")

    def _line_at(self, pos: int) -> int:
        """The line of buffer position ``pos``, counted only now: counting as we go costs 5%."""
        lines, remaining = 1, self._dropped
        with open(self.path, encoding="utf-8-sig") as handle:
            while remaining > 0 and (chunk := handle.read(min(CHUNK_CHARS, remaining))):
                lines += chunk.count("\n")
                remaining -= len(chunk)
        return lines + self._buffer.count("\n", 0, pos)


def _line_value(line: str) -> Any:
    """One line's JSON value, as ``json.loads`` reads it (see the module docstring)."""
    value = orjson_value(line.encode("utf-8"))  # a line read from UTF-8 text always encodes
    return json.loads(line) if value is UNSURE else value


class JsonLines:
    """Iterate ``(line_number, object)`` over a JSON Lines file; see the module docstring.

    With a :class:`RunShare` (two processes reading one file: :mod:`~evalsite.execute.importers.shared_reading`),
    the file is read in runs of whole lines of about :data:`RUN_CHARS` (the same runs in each
    process) and each run is first offered to the share, whose values (mapped elsewhere) are
    yielded in the run's place, each with the number of the run's first line. A run is decoded whole
    by orjson only when every line surely reads as ``json.loads`` reads it and is an object;
    any other run (a line the standard decoder must read, a bad or torn line) is read line by
    line exactly as without a share, so its errors, line numbers and truncation are the same."""

    def __init__(self, path: Path, label: str | None = None, share: RunShare | None = None):
        self.path = Path(path)
        self.label = label or str(path)
        self.share = share
        self.truncated = False

    def __iter__(self) -> Iterator[tuple[int, Any]]:
        share = self.share
        if share is not None and not _utf8(self.path):  # read as without a share, so it fails where it always did
            share.finished()
            share = None
        try:
            with open(self.path, encoding="utf-8-sig") as handle:
                if share is None:
                    yield from self._lines(enumerate(handle, start=1))
                else:
                    yield from self._shared(handle, share)
        except UnicodeDecodeError as exc:
            raise SourceError(f"{self.label}: not UTF-8 text ({exc.reason})") from None

    def _lines(self, numbered: Iterable[tuple[int, str]]) -> Iterator[tuple[int, JSONObject]]:
        for number, line in numbered:
            if not line.strip():
                continue
            try:
                record = _line_value(line)
            except json.JSONDecodeError as exc:
                if not line.endswith("\n"):
                    self.truncated = True
                    return
                raise SourceError(f"{self.label}: line {number}: invalid JSON: {exc.msg}") from None
            except RecursionError:
                raise SourceError(f"{self.label}: line {number}: {TOO_DEEP}") from None
            except ValueError as exc:
                raise SourceError(f"{self.label}: line {number}: invalid JSON: {json_problem(exc)}") from None
            if not isinstance(record, dict):
                raise SourceError(f"{self.label}: line {number}: {json_kind(record)}, expected a JSON object")
            yield number, record

    def _shared(self, handle: IO[str], share: RunShare) -> Iterator[tuple[int, Any]]:
        number, offset = 1, 0
        for run, text in enumerate(_runs_of_lines(handle)):
            claimed = share.claim(run, offset, offset + len(text))
            if claimed is None:
                numbered = _objects(text, number)
                share.decoded(None if numbered is None else [value for _, value in numbered])
                yield from self._lines(enumerate(_lines_of(text), start=number)) if numbered is None else numbered
            else:
                yield from ((number, value) for value in claimed)
            number += text.count("\n")
            offset += len(text)
        share.finished()


def _utf8(path: Path) -> bool:
    """Whether the file is UTF-8 text throughout (~50 ms of CPU for 60 MB). One that is not is read
    line by line, as without a share, so it fails where it always did: after the lines before the
    chunk of the file that holds the culprit (read in runs, it would fail before some of them)."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    try:
        with open(path, "rb") as handle:
            while chunk := handle.read(CHUNK_CHARS):
                decoder.decode(chunk)
        decoder.decode(b"", final=True)
    except UnicodeDecodeError:
        return False
    return True


def _runs_of_lines(handle: IO[str]) -> Iterator[str]:
    """The text of ``handle`` in runs of whole lines, each about :data:`RUN_CHARS` long (a longer
    line is a run of its own); the last may end without a line break."""
    while text := handle.read(RUN_CHARS):
        yield text if text.endswith("\n") else text + handle.readline()


def _lines_of(text: str) -> Iterator[str]:
    """``text``'s lines as iterating a file gives them: each with its line break, the last maybe without."""
    pieces = text.split("\n")
    yield from (piece + "\n" for piece in pieces[:-1])
    if pieces[-1]:
        yield pieces[-1]


def _objects(text: str, first: int) -> list[tuple[int, Any]] | None:
    """The objects on ``text``'s non-blank lines (the first is line ``first``), each decoded by orjson
    with its line's number, or None when a line is not surely read as ``json.loads`` reads it
    (:func:`orjson_value`) or is not an object. The run is encoded and searched for a long run of
    digits once, not line by line (~1 µs a line). A line blank only as text (a no-break space,
    which ``str.strip`` removes and ``bytes.strip`` keeps) is not JSON: it sends the run line by
    line, where it is skipped as before."""
    data = text.encode("utf-8")  # (from UTF-8 text: always encodes)
    if has_digit_run(data, ORJSON_RISKY_DIGITS):
        return None
    numbered = []
    for number, line in enumerate(data.split(b"\n"), start=first):
        if line.strip():
            value = orjson_value(line, digits_checked=True)
            if type(value) is not dict:
                return None
            numbered.append((number, value))
    return numbered
