"""The manifest schema an editor is given: the validation schema with the names it may use enumerated.

:mod:`evalsite.experiment.schema_check`'s schema takes any string as an evaluator ``type`` or an
arm's ``target``: validation checks those names against the registries (where an installed
plugin's name is found on demand and a typo gets "did you mean"), which the experiment layer
cannot see. An editor has only the schema, so the one ``evalsite schema`` prints and
``evalsite init`` writes enumerates the evaluator types and target kinds this installation knows —
the built-ins and every installed plugin's — plus the ``<kind>:<rest>`` forms (``python:module:
function``, ``openai:gpt-4o``), and an editor flags ``type: exactt`` or ``target: pyhton:…``. It is
a snapshot: after installing a plugin, write it again (docs/reference/commands/data.md).
"""

from __future__ import annotations

import copy
import json
import re
from typing import Any

from evalsite.calls.targets import target_kinds
from evalsite.experiment.schema_check import manifest_schema
from evalsite.scoring.evaluators.base import EVALUATORS


def editor_schema() -> dict[str, Any]:
    """The validation schema with ``evaluators[].type`` and ``arms[].target`` enumerated."""
    schema = copy.deepcopy(manifest_schema())
    evaluator = schema["properties"]["evaluators"]["items"]["properties"]
    evaluator["type"] = evaluator_type_schema()
    arm = schema["$defs"]["arm"]["properties"]
    arm["target"] = target_schema(arm["target"]["description"])
    return schema


def editor_schema_text() -> str:
    """:func:`editor_schema` as the file editors read (``.evalsite/manifest.schema.json``)."""
    return json.dumps(editor_schema(), indent=2, ensure_ascii=False) + "\n"


def evaluator_type_schema() -> dict[str, Any]:
    """A family written alone (``exact``), or one that takes a reference with it (``python:module:function``)."""
    kinds = EVALUATORS.names()
    with_reference = [kind for kind in kinds if EVALUATORS.get(kind).takes_reference]
    options: list[dict[str, Any]] = [{"enum": [kind for kind in kinds if kind not in with_reference]}]
    if with_reference:
        options.append({"type": "string", "pattern": f"^{_alternatives(with_reference)}:.+$"})
    written = ", ".join(f"{kind}:<reference>" if kind in with_reference else kind for kind in kinds)
    return {"anyOf": options, "description": f"A registered evaluator type: {written}."}


def target_schema(description: str) -> dict[str, Any]:
    """A kind alone (``none``, ``openai`` with ``params.model``) or ``<kind>:<spec>`` (``python:arms.qa:answer``)."""
    kinds = target_kinds()
    return {
        "anyOf": [{"enum": kinds}, {"type": "string", "pattern": f"^{_alternatives(kinds)}:.+$"}],
        "description": f"{description} Kinds: {', '.join(kinds)}.",
    }


#: Regex syntax characters: a name's are escaped with a backslash, which Python and an editor's
#: JavaScript (``u`` flag) both read; ``re.escape`` also escapes ``-``, which the latter refuses.
SYNTAX = re.compile(r"[\\^$.|?*+()\[\]{}]")


def _alternatives(names: list[str]) -> str:
    return "(?:" + "|".join(SYNTAX.sub(r"\\\g<0>", name) for name in names) + ")"
