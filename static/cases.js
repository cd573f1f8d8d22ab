/* evalsite: a run's case listing, drawn from its data scripts (data/runs/<run>/). The status
   and text filters, the sort and the pages work over every case of the run, not one page. */
(function () {
  "use strict";
  var data = window.evalsite && window.evalsite.data;
  var box = document.querySelector(".case-listing");
  if (!data || !box) { return; }
  var el = data.el, format = data.format;
  var root = box.getAttribute("data-root"), folder = box.getAttribute("data-folder");
  var items = box.getAttribute("data-items"), size = +box.getAttribute("data-page-size") || 100;
  var redacted = box.getAttribute("data-redacted") === "1", run = box.getAttribute("data-run");
  var all = [], shown = [], page = 0, sortKey = "ord", ascending = true;

  var controls = el("p", "filter-box");
  var status = el("select");
  [["", "every case"], ["passed", "passed"], ["failed", "failed"], ["errored", "errored"], ["critical", "critical rows"],
   ["unscored", "unscored"]].forEach(function (pair) {
    var option = el("option", "", pair[1]);
    option.value = pair[0];
    status.appendChild(option);
  });
  status.setAttribute("data-filter-status", "cases-table");
  var needle = el("input");
  needle.type = "search";
  needle.placeholder = "item, input, output, error…";
  needle.setAttribute("data-filter-table", "cases-table");
  var label = el("label", "", "Show ");
  label.appendChild(status);
  controls.appendChild(label);
  controls.appendChild(document.createTextNode(" "));
  var label2 = el("label", "", "containing ");
  label2.appendChild(needle);
  controls.appendChild(label2);
  var tally = el("span", "muted");
  controls.appendChild(document.createTextNode(" "));
  controls.appendChild(tally);
  var pager = el("p", "pages");
  var holder = el("div", "scroll");
  var links = el("p", "downloads");
  var note = el("p", "muted", "Loading the cases…");
  [controls, pager, holder, links, note].forEach(function (node) { box.appendChild(node); });

  function matches(c, wanted, text) {
    if (wanted === "critical" ? !c.critical : wanted && c.status !== wanted) { return false; }
    if (!text) { return true; }
    var fields = [c.item, c.input, c.expected, c.output, c.error].concat(c.scores.map(function (s) { return s.detail; }));
    return fields.some(function (f) { return f && f.toLowerCase().indexOf(text) !== -1; });
  }

  function apply() {
    var text = needle.value.trim().toLowerCase(), wanted = status.value;
    shown = all.filter(function (c) { return matches(c, wanted, text); });
    var sign = ascending ? 1 : -1;
    shown.sort(function (a, b) {
      var x = a[sortKey], y = b[sortKey];
      if (x === y) { return a.ord - b.ord; }
      if (x === null || x === undefined) { return 1; }
      if (y === null || y === undefined) { return -1; }
      return (x < y ? -1 : 1) * sign;
    });
    page = Math.min(page, Math.max(0, Math.ceil(shown.length / size) - 1));
    draw();
  }

  var COLUMNS = [["item", "ord"], ["status", "status"], ["score", "score"]]
    .concat(redacted ? [] : [["input", null], ["expected", null], ["output", null]])
    .concat([["evaluators", null], ["latency", "latency"], ["tokens in/out", null], ["cost", "cost"]]);

  function review() { return window.evalsite.review && run ? window.evalsite.review : null; }

  function header() {
    var head = el("thead"), row = el("tr");
    COLUMNS.concat(review() ? [["review", null]] : []).forEach(function (column) {
      var th = el("th");
      if (!column[1]) { th.textContent = column[0]; row.appendChild(th); return; }
      var button = el("button", "sort", column[0]);
      button.type = "button";
      button.title = "sort every case by " + column[0];
      if (sortKey === column[1]) { th.setAttribute("aria-sort", ascending ? "ascending" : "descending"); }
      button.addEventListener("click", function () {
        ascending = sortKey === column[1] ? !ascending : true;
        sortKey = column[1];
        apply();
      });
      th.appendChild(button);
      row.appendChild(th);
    });
    head.appendChild(row);
    return head;
  }

  function slug(text) { return text.replace(/[^A-Za-z0-9_.-]+/g, "-").replace(/^[-.]+|[-.]+$/g, "") || "unnamed"; }

  function caseRow(c) {
    var tr = el("tr", "case case-" + c.status + (c.critical ? " critical" : ""));
    tr.id = slug("case-" + c.item + "-" + c.repeat);
    var first = el("td");
    var code = el("code", "", c.item);
    if (items) {
      var link = el("a");
      link.href = root + items + c.bucket + ".html#" + c.anchor;
      link.appendChild(code);
      first.appendChild(link);
    } else { first.appendChild(code); }
    if (c.repeat) { first.appendChild(el("span", "muted", " #" + c.repeat)); }
    if (c.critical) { first.appendChild(document.createTextNode(" ")); first.appendChild(el("span", "badge badge-critical", "critical")); }
    if (c.cache === "hit") { first.appendChild(document.createTextNode(" ")); first.appendChild(el("span", "badge", "cached")); }
    tr.appendChild(first);
    var st = el("td");
    st.appendChild(el("span", "badge badge-" + c.status, c.status));
    if (c.error) { st.appendChild(el("pre", "text error", c.error)); }
    if (c.finish) { st.appendChild(el("br")); st.appendChild(el("span", "muted", "finish: " + c.finish)); }
    tr.appendChild(st);
    tr.appendChild(c.score === null ? cell("num", el("span", "muted", "unscored")) : el("td", "num", format.number(c.score)));
    var shown = window.evalsite.transcript;
    if (!redacted) {
      ["input", "expected", "output"].forEach(function (key) {
        var short = key === "input" ? "in" : key === "expected" ? "exp" : "out", text = c[key], omitted = c.cut[short];
        var more = function () { return data.whole(root, c, short); };
        var td = cell("", shown && text !== null ? shown.longText(text, omitted, "", more) : data.textBlock(text, omitted));
        if (key === "output" && shown && c.transcript) { td.appendChild(shown.render(c.transcript)); }
        tr.appendChild(td);
      });
    }
    var list = el("ul", "scores");
    c.scores.forEach(function (s) {
      var kind = s.error ? "errored" : s.skipped ? "skipped" : s.passed ? "passed" : s.passed === false ? "failed" : "unscored";
      var li = el("li");
      li.appendChild(el("span", "badge badge-" + kind, s.evaluator));
      if (s.score !== null) { li.appendChild(document.createTextNode(" " + format.number(s.score))); }
      if (s.label) { li.appendChild(document.createTextNode(" ")); li.appendChild(el("em", "", s.label)); }
      var why = shown ? shown.explanation(s) : null;
      if (why) { li.appendChild(why); } else if (s.error) { li.appendChild(el("pre", "text error", s.error)); } else if (s.detail) { li.appendChild(el("pre", "text detail", s.detail)); }
      list.appendChild(li);
    });
    tr.appendChild(cell("", list));
    tr.appendChild(el("td", "num", format.ms(c.latency)));
    tr.appendChild(el("td", "num", format.count(c.tokensIn) + " / " + format.count(c.tokensOut)));
    tr.appendChild(el("td", "num", format.usd(c.cost)));
    if (review()) { tr.appendChild(cell("review-cell", review().controls(run, c))); }
    return tr;
  }

  function cell(className, child) {
    var td = el("td", className);
    td.appendChild(child);
    return td;
  }

  function draw() {
    var pages = Math.max(1, Math.ceil(shown.length / size));
    tally.textContent = shown.length ? data.pageRange(shown.length, page, size) +
      (shown.length < all.length ? " (of " + all.length.toLocaleString("en-US") + " cases)" : " cases") : "no case matches";
    data.drawPager(pager, "#cases", page, pages, function (n) { page = n; draw(); });
    var table = el("table", "data cases");
    table.id = "cases-table";
    table.appendChild(header());
    var body = el("tbody");
    shown.slice(page * size, (page + 1) * size).forEach(function (c) { body.appendChild(caseRow(c)); });
    table.appendChild(body);
    while (holder.firstChild) { holder.removeChild(holder.firstChild); }
    holder.appendChild(table);
    drawDownloads();
  }

  function drawDownloads() {
    while (links.firstChild) { links.removeChild(links.firstChild); }
    var rows = shown.map(function (c) {
      var row = { item_id: c.item, repeat: c.repeat, status: c.status, critical: c.critical, score: c.score,
                  latency_ms: c.latency, input_tokens: c.tokensIn, output_tokens: c.tokensOut, cost_usd: c.cost,
                  finish_reason: c.finish, error: c.error };
      if (!redacted) { row.input = c.input; row.expected = c.expected; row.output = c.output; }
      c.scores.forEach(function (s) {
        row["score:" + s.evaluator] = s.score;
        row["passed:" + s.evaluator] = s.passed;
        if (!redacted) { row["detail:" + s.evaluator] = s.error || s.detail; }
      });
      return row;
    });
    var columns = [];
    rows.forEach(function (r) { Object.keys(r).forEach(function (k) { if (columns.indexOf(k) === -1) { columns.push(k); } }); });
    links.appendChild(document.createTextNode("Download the " + rows.length.toLocaleString("en-US") + " cases shown: "));
    links.appendChild(data.download("cases.csv", "text/csv", data.csv(columns, rows)));
    links.appendChild(document.createTextNode(" · "));
    links.appendChild(data.download("cases.json", "application/json", JSON.stringify(rows)));
  }

  /* The counts above the listing are links (#cases-failed …) that pick the status filter. */
  function fromHash() {
    var match = /^#cases-(\w+)$/.exec(window.location.hash);
    if (!match) { return; }
    status.value = match[1] === "all" ? "" : match[1];
    page = 0;
    apply();
  }

  status.addEventListener("change", function () { page = 0; apply(); });
  needle.addEventListener("input", function () { page = 0; apply(); });
  window.addEventListener("hashchange", fromHash);
  data.runCases(root, folder).then(function (cases) {
    all = cases;
    box.removeChild(note);
    apply();
    fromHash();
  });
}());
