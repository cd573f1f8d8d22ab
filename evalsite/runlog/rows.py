"""What the run log contract says about an eval row, shared by every layer that reads one."""

from __future__ import annotations


def is_critical(row: dict) -> bool:
    """A row marked ``metadata.critical: true`` (exactly ``true``) must pass."""
    metadata = row.get("metadata")
    return isinstance(metadata, dict) and metadata.get("critical") is True
