/* evalsite: a compare page lists the items that changed; the unchanged ones (a data script) are
   drawn into the same table when the reader asks for them. */
(function () {
  "use strict";
  var data = window.evalsite && window.evalsite.data;
  var box = document.querySelector(".changed-only[data-unchanged]");
  if (!data || !box || !box.getAttribute("data-unchanged")) { return; }
  var el = data.el, root = box.getAttribute("data-root");
  var toggle = box.querySelector(".unchanged-toggle"), input = box.querySelector("input.show-unchanged");
  var loaded = false;
  toggle.hidden = false;

  function number(value) { return el("td", "num", data.format.number(value)); }

  function row(r) {
    var tr = el("tr", "change-unchanged"), first = el("td"), code = el("code", "", r[0]);
    if (r[1]) {
      var link = el("a");
      link.href = root + r[1];
      link.appendChild(code);
      first.appendChild(link);
    } else { first.appendChild(code); }
    tr.appendChild(first);
    [r[2], r[3], r[4]].forEach(function (v) { tr.appendChild(number(v)); });
    var change = el("td");
    change.appendChild(el("span", "badge badge-unchanged", "unchanged"));
    tr.appendChild(change);
    tr.appendChild(el("td", "", r[5] ? "yes" : "no"));
    return tr;
  }

  input.addEventListener("change", function () {
    if (loaded || !input.checked) { return; }
    loaded = true;
    data.load(root, box.getAttribute("data-unchanged")).then(function (rows) {
      var table = box.querySelector("#items table");
      var body = table ? table.tBodies[0] : null;
      if (!body) {  /* no item changed: the table is drawn for the unchanged ones */
        table = el("table", "data");
        var head = el("thead"), tr = el("tr");
        ["item", "baseline", "current", "Δ", "change", "re-scored"].forEach(function (name) { tr.appendChild(el("th", "", name)); });
        head.appendChild(tr);
        table.appendChild(head);
        body = el("tbody");
        table.appendChild(body);
        var scroll = el("div", "scroll");
        scroll.appendChild(table);
        box.querySelector("#items").insertBefore(scroll, box.querySelector("#items p.downloads"));
      }
      (rows || []).forEach(function (r) { body.appendChild(row(r)); });
    });
  });
}());
