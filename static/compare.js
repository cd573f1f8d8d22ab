/* evalsite: a compare page lists the largest changes as HTML; the other changed items and the
   unchanged ones (data scripts) are drawn into the same table when the reader asks for them. */
(function () {
  "use strict";
  var data = window.evalsite && window.evalsite.data;
  var box = document.querySelector(".changed-only");
  if (!data || !box) { return; }
  var el = data.el, root = box.getAttribute("data-root");

  function number(value) { return el("td", "num", data.format.number(value)); }

  /* r: [item id, item page, baseline, current, delta, re-scored, classification] */
  function row(r, kind) {
    var change = r[6] || "unchanged";
    var tr = el("tr", kind + " change-" + change), first = el("td"), code = el("code", "", r[0]);
    if (r[1]) {
      var link = el("a");
      link.href = root + r[1];
      link.appendChild(code);
      first.appendChild(link);
    } else { first.appendChild(code); }
    tr.appendChild(first);
    [r[2], r[3], r[4]].forEach(function (v) { tr.appendChild(number(v)); });
    var badge = el("td");
    badge.appendChild(el("span", "badge badge-" + change, change));
    tr.appendChild(badge);
    tr.appendChild(el("td", "", r[5] ? "yes" : "no"));
    return tr;
  }

  function tableBody() {
    var table = box.querySelector("#items table");
    if (table) { return table.tBodies[0]; }
    table = el("table", "data");  /* no item changed: the table is drawn for the unchanged ones */
    var head = el("thead"), tr = el("tr");
    ["item", "baseline", "current", "Δ", "change", "re-scored"].forEach(function (name) { tr.appendChild(el("th", "", name)); });
    head.appendChild(tr);
    table.appendChild(head);
    var body = el("tbody");
    table.appendChild(body);
    var scroll = el("div", "scroll");
    scroll.appendChild(table);
    box.querySelector("#items").insertBefore(scroll, box.querySelector("#items p.downloads"));
    return body;
  }

  /* a toggle that draws the rows of its data scripts (listed in the box's attribute) once, when first checked */
  function offer(toggleClass, inputClass, attribute, kind) {
    var keys = (box.getAttribute(attribute) || "").split(" ").filter(Boolean);
    var toggle = box.querySelector("." + toggleClass), input = box.querySelector("input." + inputClass);
    if (!keys.length || !toggle || !input) { return; }
    toggle.hidden = false;
    var loaded = false;
    input.addEventListener("change", function () {
      if (loaded || !input.checked) { return; }
      loaded = true;
      Promise.all(keys.map(function (key) { return data.load(root, key); })).then(function (parts) {
        var body = tableBody();
        parts.forEach(function (rows) { (rows || []).forEach(function (r) { body.appendChild(row(r, kind)); }); });
      });
    });
  }

  offer("more-toggle", "show-more-changed", "data-more", "change-more");
  offer("unchanged-toggle", "show-unchanged", "data-unchanged", "change-unchanged");
}());
