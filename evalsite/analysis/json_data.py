"""Reports as JSON-ready data (dataclasses become objects, numpy values numbers and lists), and
as tables for a notebook (:class:`Tabular`).

Fields marked ``metadata={"internal": True}`` (a run's whole header) are left out, tuples become
lists, and a number that is not finite (an undefined p-value, an effect no sample size can
detect) becomes ``null``.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from evalsite.analysis.rows import html_table, pick_rows

if TYPE_CHECKING:
    import pandas


def json_ready(value: Any) -> Any:
    """``value`` as data ``json.dumps`` writes as is (see the module docstring)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {
            f.name: json_ready(getattr(value, f.name))
            for f in dataclasses.fields(value)
            if not f.metadata.get("internal")
        }
    if isinstance(value, dict):
        return {str(key): json_ready(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_ready(item) for item in value]
    if isinstance(value, np.ndarray):
        return json_ready(value.tolist())
    if isinstance(value, np.generic):
        return json_ready(value.item())
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


class Tabular:
    """A report's ``--json`` data and its ``-o FILE.csv`` table, for scripts and notebooks.

    A report names its table's columns once (:attr:`TABLE_COLUMNS`: column -> dotted path in one
    record of its JSON data) and where its records are (:meth:`_records`); the CLI's ``-o`` and
    these methods both read them, so a notebook's table has the CSV's columns and values."""

    TABLE_COLUMNS: ClassVar[Mapping[str, str]]

    def to_json(self) -> Any:
        """What the command's ``--json`` prints."""
        return json_ready(self)

    def _records(self, data: Any) -> Sequence[Mapping[str, Any]]:
        raise NotImplementedError

    def table(self, data: Any = None) -> list[dict[str, Any]]:
        """The rows ``-o FILE.csv`` writes, as dicts (``data``: this report's :meth:`to_json`, when made already)."""
        return pick_rows(self._records(self.to_json() if data is None else data), self.TABLE_COLUMNS)

    def to_pandas(self) -> pandas.DataFrame:
        """:meth:`table` as a pandas DataFrame (pandas is not a dependency: install it to use this)."""
        try:
            import pandas
        except ImportError:
            raise ImportError("to_pandas needs pandas: pip install pandas") from None
        return pandas.DataFrame(self.table(), columns=list(self.TABLE_COLUMNS))

    def _repr_html_(self) -> str:
        """Jupyter's view of the report: :meth:`table`, escaped, as an HTML table."""
        return html_table(self.table(), list(self.TABLE_COLUMNS))
