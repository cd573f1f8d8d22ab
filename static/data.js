/* evalsite: load the build's data scripts (data/**.js) and decode a run's cases.
   A data script calls evalsiteData(key, payload); scripts load from file:// as from any static
   host, where fetch() would not. Every text from a run is put on the page with textContent. */
(function () {
  "use strict";
  if (window.evalsite && window.evalsite.data) { return; }
  var store = {}, waiting = {};
  var STATUSES = ["passed", "failed", "errored", "unscored"];

  window.evalsiteData = function (key, payload) { store[key] = payload; };

  function load(root, path) {
    var key = path.replace(/\.js$/, "");
    if (Object.prototype.hasOwnProperty.call(store, key)) { return Promise.resolve(store[key]); }
    if (!waiting[key]) {
      waiting[key] = new Promise(function (resolve) {
        var script = document.createElement("script");
        script.src = root + path;
        script.onload = function () { resolve(store[key] || null); };
        script.onerror = function () { resolve(null); };
        document.head.appendChild(script);
      });
    }
    return waiting[key];
  }

  var ITEM_TEXT = -1;

  /* One part of a run's case data (evalsite/site/casedata.py) as case objects; `items` is the item
     texts file the part names (part.it), whose texts fill the inputs and expected values marked ITEM_TEXT. */
  function decode(part, items) {
    var s = part.s, text = function (i) { return i === null || i === undefined ? null : s[i]; };
    var shared = items && items.items || {};
    var itemText = function (i, item, slot) {
      if (i !== ITEM_TEXT) { return text(i); }
      var entry = Object.prototype.hasOwnProperty.call(shared, item) ? shared[item] : null;
      return entry ? entry[slot] : null;
    };
    var cut = {};
    Object.keys(part.cut || {}).forEach(function (key) {
      var pairs = part.cut[key];
      for (var i = 0; i < pairs.length; i += 2) { (cut[pairs[i]] = cut[pairs[i]] || {})[key] = pairs[i + 1]; }
    });
    return part.item.map(function (itemIndex, row) {
      return {
        row: row, whole: part.wh === 1,
        item: s[itemIndex], ord: part.ord[row], repeat: part.rep[row], status: STATUSES[part.st[row]],
        critical: part.crit[row] === null ? null : part.crit[row] === 1,
        input: itemText(part["in"][row], s[itemIndex], 0), expected: itemText(part.exp[row], s[itemIndex], 1), output: text(part.out[row]), cut: cut[row] || {},
        score: part.score[row], latency: part.lat[row], tokensIn: part.tin[row], tokensOut: part.tout[row],
        cost: part.cost[row], error: text(part.err[row]), finish: text(part.fin[row]), cache: text(part.cache[row]),
        transcript: part.tr && part.tr[row] !== null ? JSON.parse(s[part.tr[row]]) : null,
        anchor: part.anc[row] === null ? "item-" + s[itemIndex] : s[part.anc[row]],
        scores: part.sc[row].map(function (v) {
          return { evaluator: part.ev[v[0]], score: v[1], passed: v[2] === null ? null : v[2] === 1,
                   label: text(v[3]), detail: text(v[4]), error: text(v[5]), skipped: v[6] === 1 };
        })
      };
    });
  }

  /* Every case of a run (folder: data/runs/<run>/), or only those whose items fall in one bucket. */
  function runCases(root, folder, bucket) {
    return load(root, folder + "index.js").then(function (index) {
      if (!index) { return []; }
      var wanted = Object.keys(index.parts).filter(function (b) { return bucket === undefined || b === bucket; });
      var paths = [];
      wanted.forEach(function (b) { for (var n = 0; n < index.parts[b]; n += 1) { paths.push(folder + b + "-" + n + ".js"); } });
      return Promise.all(paths.map(function (p) { return load(root, p); })).then(function (parts) {
        return Promise.all(parts.map(function (part) { return part && part.it ? load(root, part.it) : null; })).then(function (items) {
          return [parts, items];
        });
      }).then(function (loaded) {
        var parts = loaded[0], items = loaded[1], cases = [];
        parts.forEach(function (part, n) {
          if (!part) { return; }
          var b = paths[n].slice(folder.length, folder.length + 2);
          decode(part, items[n]).forEach(function (c) {
            c.bucket = b;
            c.wholeFrom = c.whole ? paths[n].replace(/\.js$/, ".whole.js") : null;
            cases.push(c);
          });
        });
        return cases;
      });
    });
  }

  /* The whole text of a case's cut field ("in", "exp", "out"): [text, characters still left out]. */
  function whole(root, c, key) {
    if (!c.wholeFrom) { return Promise.resolve(null); }
    return load(root, c.wholeFrom).then(function (found) {
      var rows = found && found.rows, mine = rows && rows[c.row];
      return mine && mine[key] ? mine[key] : null;
    });
  }

  function el(tag, className, text) {
    var node = document.createElement(tag);
    if (className) { node.className = className; }
    if (text !== undefined && text !== null) { node.textContent = String(text); }
    return node;
  }

  /* Number formats, as evalsite/site/formatting.py writes them on the server-rendered pages. */
  function missing(v) { return v === null || v === undefined || typeof v === "number" && !isFinite(v); }
  var format = {
    number: function (v, digits) {
      if (missing(v)) { return "—"; }
      return Number.isInteger(v) && digits === undefined ? v.toLocaleString("en-US") : v.toFixed(digits === undefined ? 3 : digits);
    },
    count: function (v) { return missing(v) ? "—" : Math.round(v).toLocaleString("en-US"); },
    ms: function (v) {
      if (missing(v)) { return "—"; }
      return v >= 10000 ? (v / 1000).toFixed(2) + " s" : v < 100 ? v.toFixed(1) + " ms" : v.toFixed(0) + " ms";
    },
    usd: function (v) {
      if (missing(v)) { return "unknown"; }
      if (v === 0) { return "$0"; }
      var digits = Math.abs(v) >= 1 ? 2 : Math.min(8, 2 + Math.max(0, -Math.floor(Math.log10(Math.abs(v)))));
      return "$" + v.toFixed(digits);
    }
  };

  /* A text block as the server renders one: <pre class="text"> and a note when it was cut. */
  function textBlock(text, omitted) {
    if (text === null || text === undefined) { return el("span", "muted", "—"); }
    var box = document.createDocumentFragment();
    box.appendChild(el("pre", "text", text));
    if (omitted) { box.appendChild(el("p", "cut", "… " + omitted.toLocaleString("en-US") + " more characters not shown (max_field_chars).")); }
    return box;
  }

  /* A download link for rows the reader has on screen, made in the browser (no copy on disk). */
  function download(name, type, content) {
    var link = el("a", "", name);
    link.href = URL.createObjectURL(new Blob([content], { type: type }));
    link.download = name;
    return link;
  }

  /* "101–200 of 2,500": which of `count` rows page `page` (of `size` rows) shows. */
  function pageRange(count, page, size) {
    return (page * size + 1).toLocaleString("en-US") + "–" + Math.min(count, (page + 1) * size).toLocaleString("en-US") +
      " of " + count.toLocaleString("en-US");
  }

  /* Page links into `pager`: previous, the first, last and nearby page numbers, next; a link goes
     to `anchor` and calls `go(n)` with the page it names. */
  function drawPager(pager, anchor, page, pages, go) {
    var link = function (text, number) {
      var a = el("a", "", text);
      a.href = anchor;
      a.addEventListener("click", function (event) { event.preventDefault(); go(number); });
      return a;
    };
    while (pager.firstChild) { pager.removeChild(pager.firstChild); }
    if (pages < 2) { return; }
    if (page > 0) { pager.appendChild(link("← previous", page - 1)); pager.appendChild(document.createTextNode(" ")); }
    var numbers = [0, page - 2, page - 1, page, page + 1, page + 2, pages - 1].filter(function (n, i, a) {
      return n >= 0 && n < pages && a.indexOf(n) === i;
    }).sort(function (a, b) { return a - b; });
    numbers.forEach(function (n, i) {
      if (i && n - numbers[i - 1] > 1) { pager.appendChild(document.createTextNode("… ")); }
      pager.appendChild(n === page ? el("strong", "", n + 1) : link(String(n + 1), n));
      pager.appendChild(document.createTextNode(" "));
    });
    if (page < pages - 1) { pager.appendChild(link("next →", page + 1)); }
  }

  function csv(columns, rows) {
    var quote = function (v) {
      var text = v === null || v === undefined ? "" : String(v);
      return /[",\n\r]/.test(text) ? '"' + text.replace(/"/g, '""') + '"' : text;
    };
    return [columns.map(quote).join(",")].concat(rows.map(function (r) {
      return columns.map(function (c) { return quote(r[c]); }).join(",");
    })).join("\r\n") + "\r\n";
  }

  window.evalsite = window.evalsite || {};
  window.evalsite.data = { load: load, decode: decode, runCases: runCases, whole: whole, el: el, format: format,
                           textBlock: textBlock, download: download, csv: csv, pageRange: pageRange,
                           drawPager: drawPager };
}());
