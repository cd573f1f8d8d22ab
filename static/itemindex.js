/* evalsite: a dataset's item index, drawn from its data scripts (data/items/<dataset>/index-<n>.js,
   evalsite/site/itemindex.py). A row: [id, anchor or null, bucket, input snippet or null, cells];
   a cell: [mean score, passed 1/0/null, tint] per arm, or null. The text filter (id and input) and
   the outcome filter work over every row; the pages show PAGE rows each. */
(function () {
  "use strict";
  var data = window.evalsite && window.evalsite.data;
  var box = document.querySelector(".item-index");
  if (!data || !box) { return; }
  var el = data.el, format = data.format;
  var root = box.getAttribute("data-root"), parts = box.getAttribute("data-parts").split(" ");
  var columns = JSON.parse(box.getAttribute("data-columns")), size = +box.getAttribute("data-page-size") || 100;
  var TINTS = ["pass", "mixed", "fail", "missing"];
  var controls = box.querySelector(".index-filters"), needle = box.querySelector(".index-needle");
  var outcome = box.querySelector(".index-outcome"), tally = box.querySelector(".index-tally");
  var pager = box.querySelector(".index-pager"), table = box.querySelector("#item-index-table"), body = table.tBodies[0];
  var rows = [], shown = [], page = 0;

  var OUTCOMES = {
    failed: function (cells) { return cells.some(function (c) { return c && c[1] === 0; }); },
    passed: function (cells) { return cells.every(function (c) { return c && c[1] === 1; }); },
    disagree: function (cells) { return OUTCOMES.failed(cells) && cells.some(function (c) { return c && c[1] === 1; }); },
    missing: function (cells) { return cells.some(function (c) { return !c || c[1] === null; }); }
  };

  columns.forEach(function (column) {
    var th = el("th");
    var link = el("a", "", column.label);
    link.href = root + column.href;
    link.title = "newest run of " + column.label + ": " + column.run;
    th.appendChild(link);
    table.tHead.rows[0].appendChild(th);
  });

  function apply() {
    var text = needle.value.trim().toLowerCase(), wanted = OUTCOMES[outcome.value];
    shown = rows.filter(function (r) {
      return (!text || r[0].toLowerCase().indexOf(text) !== -1 || (r[3] || "").toLowerCase().indexOf(text) !== -1) &&
        (!wanted || wanted(r[4]));
    });
    page = Math.min(page, Math.max(0, Math.ceil(shown.length / size) - 1));
    draw();
  }

  function row(r) {
    var tr = el("tr"), first = el("td"), link = el("a");
    link.href = r[2] + ".html#" + (r[1] || "item-" + r[0]);
    link.appendChild(el("code", "", r[0]));
    first.appendChild(link);
    tr.appendChild(first);
    tr.appendChild(r[3] === null ? el("td", "muted", "—") : el("td", "snippet", r[3]));
    r[4].forEach(function (c) {
      if (!c) { tr.appendChild(el("td", "num muted", "—")); return; }
      var td = el("td", "num cell-" + TINTS[c[2]], format.number(c[0], 2));
      td.title = c[1] === 1 ? "passed" : c[1] === 0 ? "failed" : "no verdict";
      tr.appendChild(td);
    });
    return tr;
  }

  function draw() {
    var pages = Math.max(1, Math.ceil(shown.length / size));
    tally.textContent = shown.length ? data.pageRange(shown.length, page, size) + " items" : "no item matches";
    data.drawPager(pager, "#item-index", page, pages, function (n) { page = n; draw(); });
    while (body.firstChild) { body.removeChild(body.firstChild); }
    shown.slice(page * size, (page + 1) * size).forEach(function (r) { body.appendChild(row(r)); });
  }

  needle.addEventListener("input", function () { page = 0; apply(); });
  outcome.addEventListener("change", function () { page = 0; apply(); });
  Promise.all(parts.map(function (path) { return data.load(root, path); })).then(function (loaded) {
    loaded.forEach(function (part) { if (part) { rows = rows.concat(part); } });
    controls.hidden = false;
    apply();
  });
}());
