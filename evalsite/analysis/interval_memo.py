"""The bootstrap intervals this process computed, as data a caller may keep between processes.

``stats.bootstrap_ci`` remembers the mean intervals it computed (a pure function of the values
and options). A long-lived caller such as the site build keeps them in its cache folder and gives
them back to the next process, so a leaderboard a new run joins bootstraps only the arms and pairs
whose items changed. The payload names the code that computed it: rows kept by other code are
never recalled. The caller owns the file; this module owns what goes in it.
"""

from __future__ import annotations

from typing import Any

from evalsite.stats.intervals import recall_intervals, remembered_intervals

#: Bumped when the payload's shape changes.
PAYLOAD_VERSION = 1


def kept_intervals(code: str) -> dict[str, Any]:
    """The memo as a JSON-ready payload, stamped with ``code`` (a hash of the code that computed it)."""
    return {"version": PAYLOAD_VERSION, "code": code, "rows": remembered_intervals()}


def recall_kept_intervals(payload: Any, code: str) -> bool:
    """Put a payload :func:`kept_intervals` gave back in the memo when it was made by this ``code``;
    False (and nothing recalled) for another code, another version or a malformed payload."""
    if not isinstance(payload, dict) or payload.get("version") != PAYLOAD_VERSION or payload.get("code") != code:
        return False
    try:
        recall_intervals(payload["rows"])
    except (KeyError, TypeError, ValueError, AttributeError):
        return False
    return True
