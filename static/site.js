/* evalsite: sort tables and filter rows on the current page. Everything still reads without it. */
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

  document.querySelectorAll("table.sortable").forEach(makeSortable);
  document.querySelectorAll(".filter-box").forEach(makeFilter);
}());
