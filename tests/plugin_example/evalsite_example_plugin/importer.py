"""``evalsite import tsv FILE``: a tab-separated file with the header ``arm  id  input  output  passed``."""

from evalsite.errors import SourceError
from evalsite.execute.importers import register_importer
from evalsite.execute.importers.source_records import SourceCase, SourceItem, SourceRun, SourceScore

COLUMNS = ["arm", "id", "input", "output", "passed"]


@register_importer("tsv")
def read_tsv(source, options):
    """Hand every line to ``source`` as a case, then describe each arm's run."""
    lines = source.path.read_text(encoding="utf-8").splitlines()
    if not lines or lines[0].split("\t") != COLUMNS:
        raise SourceError(f"{source.label}: line 1: the header must be {' '.join(COLUMNS)} (tab-separated)")
    arms = []
    for number, line in enumerate(lines[1:], start=2):
        values = line.split("\t")
        if len(values) != len(COLUMNS):
            raise SourceError(f"{source.label}: line {number}: {len(values)} values for {len(COLUMNS)} columns")
        arm, item_id, text, output, passed = values
        if passed not in ("yes", "no"):
            raise SourceError(f"{source.label}: line {number}: passed is {passed!r}, not yes or no")
        score = SourceScore("passed", 1.0 if passed == "yes" else 0.0, passed == "yes")
        source.add_case(SourceCase(run=arm, item=SourceItem(item_id, text), output=output, scores=[score]))
        arms += [arm] if arm not in arms else []
    for arm in arms:
        source.describe(arm, SourceRun(arm_id=arm, experiment=source.path.stem, tool="tsv", tool_version=None,
                                       config={"arm": arm}, scorers={"passed": {"tsv": "passed column"}}))
