/* evalsite: sort tables, filter rows, diff two answers. The summaries read without it; case
   listings, item pages and the matrix are drawn by data.js, cases.js, items.js and matrix.js. */
(function () {
  "use strict";

  function cellValue(row, index) {
    var cell = row.cells[index];
    if (!cell) { return ""; }
    var sort = cell.getAttribute("data-sort");
    return sort === null ? cell.textContent.trim() : sort;
  }

  function compare(a, b, numeric) {
    if (a === "" && b === "") { return 0; }
    if (a === "") { return 1; }
    if (b === "") { return -1; }
    if (numeric) { return parseFloat(a) - parseFloat(b); }
    return a.localeCompare(b, undefined, { numeric: true });
  }

  function sortBy(table, header, index) {
    var body = table.tBodies[0];
    if (!body) { return; }
    var ascending = header.getAttribute("aria-sort") !== "ascending";
    var rows = Array.prototype.slice.call(body.rows);
    var numeric = rows.every(function (row) {
      var value = cellValue(row, index);
      return value === "" || !isNaN(parseFloat(value)) && isFinite(value);
    });
    rows.sort(function (a, b) {
      var order = compare(cellValue(a, index), cellValue(b, index), numeric);
      return ascending ? order : -order;
    });
    Array.prototype.forEach.call(header.parentNode.children, function (th) { th.removeAttribute("aria-sort"); });
    header.setAttribute("aria-sort", ascending ? "ascending" : "descending");
    rows.forEach(function (row) { body.appendChild(row); });
  }

  function makeSortable(table) {
    var head = table.tHead;
    if (!head || !head.rows.length) { return; }
    Array.prototype.forEach.call(head.rows[0].cells, function (header, index) {
      var button = document.createElement("button");
      button.type = "button";
      button.className = "sort";
      button.textContent = header.textContent;
      button.title = header.title || "sort by " + header.textContent;
      header.textContent = "";
      header.appendChild(button);
      button.addEventListener("click", function () { sortBy(table, header, index); });
    });
  }

  /* A filter box holds an optional status <select> (rows carry the class) and a text <input>. */
  function makeFilter(box) {
    var input = box.querySelector("input[data-filter-table]");
    var status = box.querySelector("select[data-filter-status]");
    var table = document.getElementById(input.getAttribute("data-filter-table"));
    if (!table || !table.tBodies[0]) { return; }
    box.hidden = false;
    function apply() {
      var needle = input.value.toLowerCase();
      var wanted = status ? status.value : "";
      Array.prototype.forEach.call(table.tBodies[0].rows, function (row) {
        var textOk = needle === "" || row.textContent.toLowerCase().indexOf(needle) !== -1;
        var statusOk = wanted === "" || row.classList.contains(wanted);
        row.hidden = !(textOk && statusOk);
      });
    }
    input.addEventListener("input", apply);
    if (status) { status.addEventListener("change", apply); }
  }

  /* Word diff of two texts: jsdiff's Myers O(ND) diff over words, spaces and punctuation
     (static/diff.js, loaded before this script), as ["same" | "ins" | "del", text] pieces. */
  function wordDiff(left, right) {
    if (!window.Diff) { return null; }
    return window.Diff.diffWordsWithSpace(left, right).map(function (change) {
      return [change.added ? "ins" : change.removed ? "del" : "same", change.value];
    });
  }

  /* A pair picker diffs any two of the outputs (pre[data-answer]) of its section. */
  function makePicker(picker) {
    var scope = picker.closest("[data-pair-scope]") || picker.parentNode;
    var answers = Array.prototype.slice.call(scope.querySelectorAll("pre[data-answer]"));
    if (answers.length < 2) { return; }
    var left = picker.querySelector("select.pick-left"), right = picker.querySelector("select.pick-right");
    var out = picker.querySelector(".worddiff-out");
    answers.forEach(function (pre, index) {
      [left, right].forEach(function (select) {
        var option = document.createElement("option");
        option.value = String(index);
        option.textContent = pre.getAttribute("data-answer");
        select.appendChild(option);
      });
    });
    var other = answers.findIndex(function (pre) { return pre.textContent !== answers[0].textContent; });
    right.value = String(other > 0 ? other : 1);
    function render() {
      while (out.firstChild) { out.removeChild(out.firstChild); }
      var pieces = wordDiff(answers[+left.value].textContent, answers[+right.value].textContent);
      if (pieces === null) { out.textContent = "No word diff: static/diff.js did not load."; return; }
      pieces.forEach(function (piece) {
        if (piece[0] === "same") { out.appendChild(document.createTextNode(piece[1])); return; }
        var mark = document.createElement(piece[0]);
        mark.textContent = piece[1];
        out.appendChild(mark);
      });
    }
    left.addEventListener("change", render);
    right.addEventListener("change", render);
    picker.hidden = false;
    render();
  }

  /* The Resolved / Submitted toggle of a configuration diff shows one of its two pickers. */
  function makeConfigToggle(box) {
    var toggle = box.querySelector(".config-toggle");
    box.hidden = false;
    toggle.querySelectorAll("input[name=config-view]").forEach(function (radio) {
      radio.addEventListener("change", function () {
        box.querySelectorAll(".config-view").forEach(function (view) { view.hidden = view.getAttribute("data-view") !== radio.value; });
      });
    });
  }

  /* A table wider than its box scrolls inside it: the line above it says so (the box's edge
     shadows say it without a script). Checked again when the window or the shown columns change. */
  function markWideTables() {
    document.querySelectorAll(".table-block > .scroll").forEach(function (box) {
      var cue = box.previousElementSibling;
      if (cue && cue.classList.contains("scroll-cue")) { cue.hidden = box.scrollWidth <= box.clientWidth + 1; }
    });
  }

  window.evalsite = window.evalsite || {};
  window.evalsite.makePicker = makePicker;
  window.evalsite.wordDiff = wordDiff;
  document.querySelectorAll(".config-diff").forEach(makeConfigToggle);
  document.querySelectorAll(".pair-picker").forEach(makePicker);
  document.querySelectorAll("table.sortable").forEach(makeSortable);
  document.querySelectorAll(".filter-box").forEach(makeFilter);
  markWideTables();
  window.addEventListener("resize", markWideTables);
  document.addEventListener("change", function (event) {
    if (event.target.classList && event.target.classList.contains("show-secondary")) { markWideTables(); }
  });
}());
