"""One verdict everywhere (issue 26, acceptance): random projects, every surface read back, one answer.

Each example writes a project the cheapest honest way (run folders as the runner writes them,
``sitekit.write_run``): 2–5 arms, some exact twins of an earlier arm (a tie), the others with
their own pass rate (true differences); 1–3 repeats with gaps (some (item, repeat) cases never
written); optionally clusters declared (``[analysis] cluster_key`` and a metadata field), a newer
run of one arm excluded with ``evalsite runs --exclude``, and a ground-truth edit of the dataset
file after the runs. Then it reads, per arm, the order and the places (rank text), and per pair Δ,
the Holm-level interval and its level, the Holm p and the verdict word from

* ``evalsite leaderboard`` (text), ``--json`` and ``-o board.csv``;
* ``check-claims --json`` on a report claiming ``A beats B`` for every ordered pair (it must hold
  exactly when the verdict separates A above B) and the CI summary (``ci summary -o summary.md``);
* the built site: the dataset page's leaderboard and pairs tables, their JSON and CSV downloads,
  the home card and datasets table, the report page's claims (re-checked at build time) and the
  experiment page's ranks,

and asserts they are one answer, up to each surface's printed rounding. The reference for the
figures the test can compute on its own (each arm's mean over the items every arm scored, each
Δ, Holm's adjustment of the raw p-values, the places the separations allow) is computed here
from the cases written, not read from the code.
"""

from __future__ import annotations

import contextlib
import csv
import json
import math
import re
import tempfile
from dataclasses import dataclass
from itertools import permutations
from pathlib import Path

import numpy as np
from cli_support import Cli
from hypothesis import Phase, example, given, settings
from hypothesis import strategies as st
from reference_support import holm_by_hand
from sitekit import Node, case, parse, table_rows, write_run

from evalsite.analysis.wording import p_text
from evalsite.experiment.datasets import load_dataset
from evalsite.site import paths

CLUSTERS, CLUSTER_SIZE = 6, 4
N_ITEMS = CLUSTERS * CLUSTER_SIZE
ALPHA = 0.05
RATES = (0.1, 0.5, 0.95)  # pass rates far enough apart that some pairs separate on 24 items
GAP = 0.15  # chance that an (item, repeat) case is never written


@dataclass(frozen=True)
class Plan:
    """One random project: per arm ``twin_of`` (an earlier arm it copies case for case) or a rate."""

    arms: tuple[int | float, ...]  # an int: twin of that earlier arm; a float: its pass rate
    repeats: int
    clustered: bool
    exclude: bool
    edit: bool
    seed: int


@st.composite
def plans(draw) -> Plan:
    n_arms = draw(st.integers(2, 5))
    arms: list[int | float] = [draw(st.sampled_from(RATES))]
    for index in range(1, n_arms):
        arms.append(draw(st.one_of(st.integers(0, index - 1), st.sampled_from(RATES))))
    return Plan(tuple(arms), draw(st.integers(1, 3)), draw(st.booleans()), draw(st.booleans()), draw(st.booleans()),
                draw(st.integers(0, 2**16)))


@dataclass
class Written:
    """What the project holds: each shown arm's per-item mean over the repeats written (NaN: no case)."""

    dataset_id: str
    item_means: dict[str, np.ndarray]


def arm_name(index: int) -> str:
    return f"arm{index}"


def write_project(root: Path, plan: Plan, cli: Cli) -> Written:
    (root / "experiments").mkdir(parents=True)
    (root / "data").mkdir()
    rows = [{"id": f"q{i:02d}", "input": f"question {i}", "expected": "yes",
             **({"metadata": {"topic": f"t{i // CLUSTER_SIZE}"}} if plan.clustered else {})} for i in range(N_ITEMS)]
    data = root / "data" / "d.jsonl"
    data.write_text("".join(json.dumps(row) + "\n" for row in rows))
    if plan.clustered:
        (root / "evalsite.toml").write_text('[analysis]\ncluster_key = "topic"\n')
    dataset = load_dataset(data)
    rng = np.random.default_rng(plan.seed)
    drawn: list[tuple[np.ndarray, np.ndarray]] = []  # per arm: scores and which cases are written
    for spec in plan.arms:
        if isinstance(spec, int):
            drawn.append(drawn[spec])  # a twin: the very same cases
        else:
            scores = (rng.random((N_ITEMS, plan.repeats)) < spec).astype(float)
            written = rng.random((N_ITEMS, plan.repeats)) >= GAP
            drawn.append((scores, written))
    means = {}
    for index, (scores, written) in enumerate(drawn):
        _write_arm(root, f"20260101T0000{index:02d}Z-{arm_name(index)}-{index:04d}", arm_name(index), dataset, scores, written)
        with np.errstate(all="ignore"):
            means[arm_name(index)] = np.where(written, scores, 0).sum(axis=1) / written.sum(axis=1)
    if plan.exclude:  # a newer run of arm0 with the opposite answers, then excluded: arm0's older run stands
        scores, written = drawn[0]
        newer = "20260101T000100Z-arm0-ffff"
        _write_arm(root, newer, arm_name(0), dataset, 1 - scores, np.ones_like(written))
        assert cli("runs", "--exclude", newer, "--reason", "a broken key").exit_code == 0
    if plan.edit:  # the ground truth of one item changes after the runs: they stay on the older version
        data.write_text(data.read_text().replace('"expected": "yes"', '"expected": "no"', 1))
    return Written(dataset.dataset_id, means)


def _write_arm(root: Path, run_id: str, arm: str, dataset, scores: np.ndarray, written: np.ndarray) -> None:
    cases = [dict(case(item.item_id, score=float(scores[i, r]), passed=bool(scores[i, r]), repeat=r), item_sha=item.sha)
             for i, item in enumerate(dataset.items) for r in range(scores.shape[1]) if written[i, r]]
    write_run(root / "runs", run_id, cases, arm=arm, dataset_id=dataset.dataset_id, dataset_path="data/d.jsonl")


# ----------------------------------------------------------------------------- the answer, as --json gives it


@dataclass(frozen=True)
class Pair:
    ahead: str
    behind: str
    delta: float
    low: float | None  # None: unbounded (too few units for any level to exclude a shift)
    high: float | None
    level: float  # the interval's confidence
    raw_p: float
    holm_p: float
    separated: bool


@dataclass(frozen=True)
class Answer:
    order: list[str]
    places: dict[str, tuple[int, int]]
    letters: dict[str, str]
    pairs: dict[tuple[str, str], Pair]
    headline: str


def from_json(board: dict) -> Answer:
    verdict = board["verdict"]
    pairs = {}
    for p in verdict["pairs"]:
        low, high = (b if b is not None and math.isfinite(b) else None for b in (p["interval"]["low"], p["interval"]["high"]))
        pairs[(p["ahead_label"], p["behind_label"])] = Pair(
            p["ahead_label"], p["behind_label"], p["difference"]["mean_diff"], low, high, p["interval"]["confidence"],
            p["difference"]["p_value"], p["holm_p"], p["separated"])
    return Answer([a["label"] for a in board["arms"]], {a["label"]: tuple(a["places"]) for a in board["arms"]},
                  {a["label"]: a["letters"] for a in board["arms"]}, pairs, verdict["headline"])


def places_text(places: tuple[int, int], suffix: str = "") -> str:
    best, worst = places
    return str(best) if best == worst else f"{best}–{worst}{suffix}"


def close(shown: str | float | None, value: float | None, decimals: int = 3) -> bool:
    """A printed number is ``value`` to the printed rounding (None: no bound shown)."""
    if value is None or shown is None:
        return value is None and shown in (None, "", "—")
    return abs(float(shown) - value) <= 0.5 * 10**-decimals + 1e-9


def check_reference(answer: Answer, written: Written) -> None:
    """The figures the test computes from the cases it wrote."""
    shown = {label: written.item_means[label] for label in answer.order}
    common = np.all([np.isfinite(m) for m in shown.values()], axis=0)
    mean = {label: float(m[common].mean()) for label, m in shown.items()}
    assert sorted(answer.order) == sorted(written.item_means)
    assert all(mean[a] >= mean[b] - 1e-12 for a, b in zip(answer.order, answer.order[1:]))  # never a worse arm first
    pairs = list(answer.pairs.values())
    assert len(pairs) == len(answer.order) * (len(answer.order) - 1) // 2
    for pair, adjusted in zip(pairs, holm_by_hand([p.raw_p for p in pairs])):
        assert math.isclose(pair.delta, mean[pair.ahead] - mean[pair.behind], abs_tol=1e-12)
        assert math.isclose(pair.holm_p, adjusted, rel_tol=1e-9, abs_tol=1e-12)
        assert pair.separated == (pair.holm_p < ALPHA)
        if np.array_equal(shown[pair.ahead], shown[pair.behind], equal_nan=True):  # twins: never separated
            assert pair.delta == 0 and not pair.separated
        excludes_zero = pair.low is not None and pair.high is not None and (pair.low > 0 or pair.high < 0)
        assert excludes_zero == pair.separated, pair  # the interval shown agrees with the decision
        share = bool(set(answer.letters[pair.ahead]) & set(answer.letters[pair.behind]))
        assert share == (not pair.separated), (pair, answer.letters)  # letters: only from the pairs tested
    position = {label: place for place, label in enumerate(answer.order, start=1)}
    for label in answer.order:
        together = [position[label]] + [position[o] for o in answer.order if o != label and not _pair(answer, label, o).separated]
        assert answer.places[label] == (min(together), max(together))


def _pair(answer: Answer, a: str, b: str) -> Pair:
    return answer.pairs.get((a, b)) or answer.pairs[(b, a)]


# ----------------------------------------------------------------------------- the CLI's surfaces


def check_text(text: str, answer: Answer) -> None:
    lines = text.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("rank "))
    arms = []
    for line in lines[header + 1:]:
        if not line.strip():
            break
        match = re.match(r"(\d+(?:–\d+ \(not separated\))?)\s+(\S+)\s+(\S+)\s", line)
        assert match, line
        arms.append((match.group(3), match.group(1), match.group(2)))
    assert arms == [(a, places_text(answer.places[a], " (not separated)"), answer.letters[a]) for a in answer.order]
    verdict_line = next(line for line in lines if line.startswith("verdict: "))
    assert verdict_line == f"verdict: {answer.headline}"
    start = next(i for i, line in enumerate(lines) if line.startswith("pair "))
    seen = set()
    for line in lines[start + 1:start + 1 + len(answer.pairs)]:
        match = re.match(r"(\S+) − (\S+)\s+([+-]\d\.\d{3})\s+\[(\S+), (\S+)\] at (\S+)%\s+\[\S+, \S+\]\s+(< 0\.001|\S+)\s+(< 0\.001|\S+)\s+(.+)$", line)
        assert match, line
        ahead, behind, delta, low, high, level, raw_p, holm_p, word = match.groups()
        pair = answer.pairs[(ahead, behind)]
        seen.add((ahead, behind))
        assert close(delta, pair.delta)
        assert close(None if "inf" in low else low, pair.low) and close(None if "inf" in high else high, pair.high)
        assert level == f"{100 * pair.level:.3g}"
        assert (raw_p, holm_p) == (p_text(pair.raw_p), p_text(pair.holm_p))
        assert (word == "separated") == pair.separated and (word.startswith("not separated") != pair.separated)
    assert seen == set(answer.pairs)


def check_csv(path: Path, answer: Answer) -> None:
    with path.open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert [row["arm"] for row in rows] == answer.order
    assert [row["places"] for row in rows] == [places_text(answer.places[a], " (not separated)") for a in answer.order]
    assert [int(row["rank"]) for row in rows] == list(range(1, len(rows) + 1))
    assert [row["group"] for row in rows] == [answer.letters[a] for a in answer.order]


def claims_report(root: Path, answer: Answer) -> list[tuple[str, str]]:
    asked = list(permutations(answer.order, 2))
    (root / "reports").mkdir(exist_ok=True)
    (root / "reports" / "verdict.md").write_text(
        "".join(f"{{{{ claim: arm={a} beats arm={b} on dataset=d, p < 0.05 }}}}\n" for a, b in asked))
    return asked


def check_claims(results: list[dict], asked: list[tuple[str, str]], answer: Answer) -> None:
    assert [r["text"] for r in results] == [f"arm={a} beats arm={b} on dataset=d, p < 0.05" for a, b in asked]
    for (a, b), result in zip(asked, results):
        pair = _pair(answer, a, b)
        sign = 1 if (pair.ahead, pair.behind) == (a, b) else -1
        assert result["status"] == ("holds" if sign == 1 and pair.separated else "fails"), (a, b, result["detail"])
        numbers = result["numbers"]
        assert numbers["p_value"] == pair.holm_p and numbers["mean_diff"] == sign * pair.delta
        bounds = sorted(sign * bound for bound in (pair.low, pair.high) if bound is not None)
        shown = [x for x in (numbers["low"], numbers["high"]) if x is not None and math.isfinite(x)]
        assert shown == bounds and numbers["confidence"] == pair.level, (a, b, numbers, pair)  # the Holm-level interval


def check_summary(text: str, results: list[dict]) -> None:
    rows = [line for line in text.splitlines() if line.startswith("| ") and "beats" in line]
    assert len(rows) == len(results)
    for row, result in zip(rows, results):
        cells = [cell.strip() for cell in row.strip("|").split(" | ")]
        assert cells[0].endswith(result["text"]) and cells[2] == result["status"]
        assert cells[3] == result["detail"]


# ----------------------------------------------------------------------------- the site's surfaces


def headers(table: Node) -> list[str]:
    return [" ".join(th.text().split()) for th in table.find("thead").find_all("th")]


def columns(table: Node) -> list[dict[str, str]]:
    names = headers(table)
    return [dict(zip(names, row)) for row in table_rows(table)]


def shown_interval(text: str) -> tuple[str, str | None, str | None]:
    """``0.350 [0.187, 0.531]`` → value and bounds; a value alone has no bounds."""
    match = re.fullmatch(r"(\S+)(?: \[(\S+), (\S+)\])?", text)
    assert match, text
    return match.group(1), match.group(2), match.group(3)


def check_site(site: Path, dataset_id: str, answer: Answer) -> None:
    page_path = site / paths.dataset(dataset_id)
    page = parse(page_path)
    board, pairs_table = page.find("div", id="leaderboard-1").find("table"), page.find("div", id="pairs-1").find("table")
    arms = [(a, places_text(answer.places[a]), answer.letters[a]) for a in answer.order]
    assert [(r["arm"], r["rank"], r["group"]) for r in columns(board)] == arms
    download = json.loads(page_path.with_name(page_path.stem + ".leaderboard-1.json").read_text())
    assert [(r["arm"], r["rank_range"], r["group"]) for r in download] == arms
    with page_path.with_name(page_path.stem + ".leaderboard-1.csv").open(newline="") as handle:
        assert [(r["arm"], r["rank_range"], r["group"]) for r in csv.DictReader(handle)] == arms

    html_pairs = columns(pairs_table)
    json_pairs = json.loads(page_path.with_name(page_path.stem + ".pairs-1.json").read_text())
    with page_path.with_name(page_path.stem + ".pairs-1.csv").open(newline="") as handle:
        csv_pairs = list(csv.DictReader(handle))
    assert len(html_pairs) == len(json_pairs) == len(csv_pairs) == len(answer.pairs)
    for html, down, flat in zip(html_pairs, json_pairs, csv_pairs):
        ahead, behind = html["pair"].split(" − ")
        pair = answer.pairs[(ahead, behind)]
        assert down["pair"] == flat["pair"] == html["pair"]
        value, low, high = shown_interval(html["Δ, Holm-level interval"])
        assert close(value, pair.delta) and close(low, pair.low) and close(high, pair.high)
        assert (down["delta"]["value"], down["delta"]["low"], down["delta"]["high"]) == (pair.delta, pair.low, pair.high)
        assert [float(flat[k]) if flat[k] else None for k in ("delta", "delta_low", "delta_high")] == [pair.delta, pair.low, pair.high]
        assert html["level"] == down["level"] == flat["level"] == f"{100 * pair.level:.3g}%"
        assert (html["p"], html["Holm p"]) == (p_text(pair.raw_p), p_text(pair.holm_p))
        assert (down["p"], down["holm_p"]) == (pair.raw_p, pair.holm_p)
        assert (float(flat["p"]), float(flat["holm_p"])) == (pair.raw_p, pair.holm_p)
        for word in (html["verdict"], down["verdict"], flat["verdict"]):
            assert (word == "separated") == pair.separated and word.startswith("not separated") != pair.separated

    cards = parse(site / "index.html").find_all("article", class_="verdict-card")
    assert len(cards) == 1
    card = cards[0]
    leader = " ".join(card.find("p", class_="leader").text().split())
    assert re.search(rf"\b{answer.order[0]}\b .* · rank {places_text(answer.places[answer.order[0]])}$", leader), leader
    headline = answer.headline if answer.headline.startswith(answer.order[0]) else answer.headline.capitalize()[:1] + answer.headline[1:]
    assert " ".join(card.find("p", class_="headline").text().split()) == headline.rstrip(".") + "."  # the arm's name as written
    versus = " ".join(card.find("p", class_="versus").text().split())
    pair = answer.pairs[(answer.order[0], answer.order[1])]
    shown = "" if pair.low is None else rf" {100 * pair.level:.3g}% Holm-level \[{pair.low:+.3f}, {pair.high:+.3f}\]"
    expected = (rf"Against {answer.order[1]}: Δ {pair.delta:+.3f}{shown}, "  # an unbounded interval: no bounds shown
                rf"p {re.escape(p_text(pair.holm_p)) if pair.holm_p < 0.001 else '= ' + p_text(pair.holm_p)} \(")
    assert re.match(expected.replace("+", r"\+"), versus), (versus, expected)


def check_site_claims(site: Path, results: list[dict]) -> None:
    """The report page re-checks the claims at build time: its download says what check-claims said."""
    shown = json.loads((site / "reports" / "verdict.claims.json").read_text())
    assert [(c["claim"], c["status"], c["detail"]) for c in shown] == [(r["text"], r["status"], r["detail"]) for r in results]


def check_experiment(site: Path, answer: Answer) -> None:
    """The experiment page's matrix footer gives each arm its places (its columns in its own order)."""
    matrix = parse(site / "experiments" / "exp.html").find("table", id="matrix-table")
    arms = [" ".join(th.text().split()) for th in matrix.find("thead").find_all("th")][1:-1]
    ranks = [" ".join(span.text().split()) for span in matrix.find("tfoot").find_all("span", class_="cell-rank")]
    assert sorted(arms) == sorted(answer.order)
    assert ranks == [f"rank {places_text(answer.places[arm])}" for arm in arms]


def check_home_datasets(site: Path, answer: Answer, value: float) -> None:
    """The home page's datasets table names the verdict's first arm and its mean."""
    (row,) = json.loads((site / "index.datasets.json").read_text())
    assert (row["best"], row["best_score"]) == (answer.order[0], value)


# ----------------------------------------------------------------------------- the property


#: Every feature at once, whatever the generated examples draw: 5 arms with two twins, 3 repeats with gaps,
#: clusters, an excluded run and a ground-truth edit.
EVERYTHING = Plan((0.95, 0, 0.5, 0.1, 2), 3, True, True, True, 113)


@settings(max_examples=8, deadline=None, derandomize=True, database=None,
          phases=[Phase.explicit, Phase.generate])  # no shrinking: each example builds a site (seconds)
@given(plans())
@example(EVERYTHING)
def test_every_surface_gives_the_one_verdict(plan: Plan) -> None:
    cli = Cli()
    with tempfile.TemporaryDirectory() as folder, contextlib.chdir(folder):
        root = Path(folder)
        written = write_project(root, plan, cli)
        board = cli.json("leaderboard")
        assert board["selection"]["dataset_id"] == written.dataset_id
        answer = from_json(board)
        check_reference(answer, written)

        text = cli("leaderboard", "-o", "board.csv")
        assert text.exit_code == 0, text.output
        check_text(text.stdout, answer)
        check_csv(root / "board.csv", answer)

        asked = claims_report(root, answer)
        claimed = cli("check-claims", "--json")
        results = json.loads(claimed.stdout)
        check_claims(results, asked, answer)
        assert claimed.exit_code == (0 if all(r["status"] == "holds" for r in results) else 1)
        summary = cli("ci", "summary", "-o", "summary.md")
        assert summary.exit_code == 0, summary.output
        check_summary((root / "summary.md").read_text(), results)

        built = cli("build")
        assert built.exit_code == 0, built.output
        check_site(root / "site", written.dataset_id, answer)
        check_site_claims(root / "site", results)
        check_home_datasets(root / "site", answer, board["arms"][0]["value"])
        check_experiment(root / "site", answer)
