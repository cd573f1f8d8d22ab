/* evalsite: the experiment's arm × item matrix, drawn from its data scripts. The filters (all /
   outputs differ / item text) and the pages work over every row; the count opens the item's input,
   expected value and every arm's output, loaded from the runs' data, with a pair picker. */
(function () {
  "use strict";
  var data = window.evalsite && window.evalsite.data;
  var box = document.querySelector(".matrix-view");
  if (!data || !box) { return; }
  var el = data.el, format = data.format;
  var root = box.getAttribute("data-root"), parts = box.getAttribute("data-parts").split(" ");
  var runs = JSON.parse(box.getAttribute("data-runs")), items = box.getAttribute("data-items");
  var size = +box.getAttribute("data-page-size") || 50, redacted = box.getAttribute("data-redacted") === "1";
  var table = box.querySelector("#matrix-table"), body = table.tBodies[0];
  var TINTS = ["pass", "mixed", "fail", "missing"];
  var FLAGS = [[2, "★", "best score"], [4, "⚡", "fastest"], [16, "T", "fewest tokens"], [8, "$", "cheapest"]];
  var rows = [], shown = [], page = 0, divergentOnly = false;

  var controls = el("p", "filter-box");
  var needle = el("input");
  needle.type = "search";
  needle.placeholder = "item id…";
  var label = el("label", "", "Items containing ");
  label.appendChild(needle);
  controls.appendChild(label);
  var tally = el("span", "muted");
  controls.appendChild(document.createTextNode(" "));
  controls.appendChild(tally);
  var pager = el("p", "pages");
  var links = el("p", "downloads");
  box.insertBefore(controls, box.querySelector(".scroll"));
  box.insertBefore(pager, box.querySelector(".scroll"));
  box.appendChild(links);

  function slug(text) { return text.replace(/[^A-Za-z0-9_.-]+/g, "-").replace(/^[-.]+|[-.]+$/g, "") || "unnamed"; }

  function apply() {
    var text = needle.value.trim().toLowerCase();
    shown = rows.filter(function (r) { return (!divergentOnly || r[3] > 1) && (!text || r[0].toLowerCase().indexOf(text) !== -1); });
    page = Math.min(page, Math.max(0, Math.ceil(shown.length / size) - 1));
    draw();
  }

  function cell(c) {
    if (!c) { return el("td", "num cell-missing", "—"); }
    var td = el("td", "num cell-" + TINTS[c[2]] + (c[3] & 1 ? " outlier" : ""));
    td.appendChild(el("span", "cell-score", format.number(c[0], 2)));
    FLAGS.forEach(function (flag) {
      if (c[3] & flag[0]) {
        var mark = el("span", "flag", flag[1]);
        mark.title = flag[2];
        td.appendChild(document.createTextNode(" "));
        td.appendChild(mark);
      }
    });
    if (TINTS[c[2]] !== "missing") {
      td.appendChild(el("br"));
      td.appendChild(el("span", "cell-costs", format.ms(c[4]) + " · " + format.number(c[5], 0) + " tok · " + format.usd(c[6])));
    }
    return td;
  }

  function anchorOf(r) { return r[1] || "item-" + r[0]; }

  function row(r) {
    var tr = el("tr", r[3] > 1 ? "divergent" : "");
    tr.id = slug("item-" + r[0]);
    var first = el("td");
    var code = el("code", "", r[0]);
    if (items) {
      var link = el("a");
      link.href = root + items + r[2] + ".html#" + anchorOf(r);
      link.appendChild(code);
      first.appendChild(link);
    } else { first.appendChild(code); }
    tr.appendChild(first);
    r[4].forEach(function (c) { tr.appendChild(cell(c)); });
    var last = el("td");
    var differ = r[3].toLocaleString("en-US") + " distinct";  /* r[3]: distinct outputs over every repeat of every arm */
    if (r[3] > 1 && !redacted) {
      var open = el("a", "", differ);
      open.href = "#" + tr.id + "-diff";
      open.addEventListener("click", function (event) { event.preventDefault(); toggleDiff(tr, r); });
      last.appendChild(open);
    } else { last.appendChild(r[3] > 1 ? document.createTextNode(differ) : el("span", "muted", "same")); }
    tr.appendChild(last);
    return tr;
  }

  /* The most common output over an arm's repeats of the item (ties: the earliest repeat). */
  function output(cases) {
    var counts = {}, best = null;
    cases.forEach(function (c) {
      var key = (c.output || "").trim();
      counts[key] = (counts[key] || 0) + 1;
      if (best === null || counts[key] > counts[(best.output || "").trim()]) { best = c; }
    });
    return best;
  }

  function toggleDiff(tr, r) {
    var next = tr.nextSibling;
    if (next && next.classList.contains("diff-row")) { body.removeChild(next); return; }
    var holder = el("tr", "diff-row"), td = el("td");
    td.colSpan = runs.length + 2;
    var block = el("div", "diff");
    block.id = tr.id + "-diff";
    block.setAttribute("data-pair-scope", "");
    block.appendChild(el("p", "muted", "Loading the outputs…"));
    td.appendChild(block);
    holder.appendChild(td);
    body.insertBefore(holder, tr.nextSibling);
    Promise.all(runs.map(function (run) { return data.runCases(root, run.folder, r[2]); })).then(function (loaded) {
      while (block.firstChild) { block.removeChild(block.firstChild); }
      var texts = el("div", "item-texts"), outputs = el("div", "outputs"), input = null, expected = null, cuts = {};
      loaded.forEach(function (cases, n) {
        var mine = cases.filter(function (c) { return c.item === r[0]; });
        if (!mine.length || !r[4][n]) { return; }
        var chosen = output(mine);
        if (input === null) { input = chosen.input; cuts.input = chosen.cut["in"]; }
        if (expected === null) { expected = chosen.expected; cuts.expected = chosen.cut.exp; }
        if (chosen.output === null) { return; }
        var box = el("div", "output cell-" + TINTS[r[4][n][2]]);
        box.appendChild(el("h4", "", runs[n].label));
        var pre = el("pre", "text", chosen.output);
        pre.setAttribute("data-answer", runs[n].label);
        box.appendChild(pre);
        if (chosen.cut.out) { box.appendChild(el("p", "cut", "… " + chosen.cut.out.toLocaleString("en-US") + " more characters not shown (max_field_chars).")); }
        outputs.appendChild(box);
      });
      [["Input", input, cuts.input], ["Expected", expected, cuts.expected]].forEach(function (pair) {
        var part = el("div");
        part.appendChild(el("h4", "", pair[0]));
        part.appendChild(data.textBlock(pair[1], pair[2]));
        texts.appendChild(part);
      });
      var title = el("p");
      title.appendChild(document.createTextNode("Item "));
      title.appendChild(el("code", "", r[0]));
      title.appendChild(document.createTextNode(": the outputs"));
      if (items) {
        var link = el("a", "", "item page");
        link.href = root + items + r[2] + ".html#" + anchorOf(r);
        title.appendChild(document.createTextNode(" · "));
        title.appendChild(link);
      }
      block.appendChild(title);
      block.appendChild(texts);
      block.appendChild(outputs);
      var picker = el("div", "pair-picker"), p = el("p"), left = el("label", "", "Diff "), right = el("label", "", " against ");
      picker.hidden = true;
      left.appendChild(el("select", "pick-left"));
      right.appendChild(el("select", "pick-right"));
      p.appendChild(left);
      p.appendChild(right);
      picker.appendChild(p);
      picker.appendChild(el("pre", "text worddiff-out"));
      block.appendChild(picker);
      window.evalsite.makePicker(picker);
    });
  }

  function draw() {
    var pages = Math.max(1, Math.ceil(shown.length / size));
    tally.textContent = shown.length ? data.pageRange(shown.length, page, size) +
      (divergentOnly ? " items whose outputs differ" : " items") : "no item matches";
    data.drawPager(pager, "#matrix", page, pages, function (n) { page = n; draw(); });
    while (body.firstChild) { body.removeChild(body.firstChild); }
    shown.slice(page * size, (page + 1) * size).forEach(function (r) { body.appendChild(row(r)); });
    while (links.firstChild) { links.removeChild(links.firstChild); }
    var records = shown.map(function (r) {
      var record = { item_id: r[0], distinct_outputs: r[3] };
      runs.forEach(function (run, n) {
        record["score:" + run.label] = r[4][n] ? r[4][n][0] : null;
        record["pass:" + run.label] = r[4][n] && r[4][n][1] !== null ? r[4][n][1] === 1 : null;
      });
      return record;
    });
    var columns = records.length ? Object.keys(records[0]) : ["item_id"];
    links.appendChild(document.createTextNode("Download the " + records.length.toLocaleString("en-US") + " rows shown: "));
    links.appendChild(data.download("matrix.csv", "text/csv", data.csv(columns, records)));
    links.appendChild(document.createTextNode(" · "));
    links.appendChild(data.download("matrix.json", "application/json", JSON.stringify(records)));
  }

  function fromHash() {
    var match = /^#matrix-(all|divergent)$/.exec(window.location.hash);
    if (!match) { return; }
    divergentOnly = match[1] === "divergent";
    page = 0;
    apply();
  }

  needle.addEventListener("input", function () { page = 0; apply(); });
  window.addEventListener("hashchange", fromHash);
  Promise.all(parts.map(function (path) { return data.load(root, path); })).then(function (loaded) {
    loaded.forEach(function (part) { if (part) { rows = rows.concat(part); } });
    apply();
    fromHash();
  });
}());
