/* evalsite: search the whole site. The documents (search/*.js, and the items straight from the
   runs' data scripts, data/runs/*) and the MiniSearch library load only when the reader first uses
   the box, as scripts, so search works on any static host and from file:// alike. Results are
   built as text nodes, never as HTML. */
(function () {
  "use strict";
  var form = document.querySelector("form.site-search");
  if (!form) { return; }
  var input = form.querySelector("input[type=search]");
  var list = form.querySelector("ol.search-results");
  var root = form.getAttribute("data-root");
  var index = null, queued = [], pending = -1, started = false, nextId = 0;

  function load(src, done) {
    var script = document.createElement("script");
    script.src = src;
    script.onload = done;
    script.onerror = done;
    document.head.appendChild(script);
  }

  function shardDone() {
    pending -= 1;
    show();
  }

  /* One doc per item of a run: its outputs, and its input and expected value from one run a dataset. */
  function runDocuments(shard) {
    withData(function (data) {
      data.runCases(root, shard.folder).then(function (cases) {
        var docs = {}, list = [];
        cases.forEach(function (c) {
          var doc = docs[c.item];
          if (!doc) {
            doc = docs[c.item] = { kind: "item", title: c.item, where: shard.arm, text: "",
                                   url: shard.items + c.bucket + ".html#" + c.anchor };
            if (shard.texts) { doc.text = [c.input, c.expected].filter(Boolean).join(" "); }
            list.push(doc);
          }
          if (c.output) { doc.text += " " + c.output; }
        });
        window.evalsiteSearch.add(list);
        shardDone();
      });
    });
  }

  var dataReady = null;
  function withData(done) {
    if (window.evalsite && window.evalsite.data) { done(window.evalsite.data); return; }
    if (!dataReady) { dataReady = new Promise(function (resolve) { load(form.getAttribute("data-data"), resolve); }); }
    dataReady.then(function () { done(window.evalsite.data); });
  }

  window.evalsiteSearch = {
    shards: function (names) {
      pending = names.length;
      names.forEach(function (name) {
        if (typeof name === "string") { load(root + name, shardDone); } else { runDocuments(name); }
      });
      if (!names.length) { show(); }
    },
    add: function (docs) {
      docs.forEach(function (doc) { doc.id = nextId; nextId += 1; });
      if (index) { index.addAll(docs); } else { queued = queued.concat(docs); }
    }
  };

  function start() {
    if (started) { return; }
    started = true;
    load(form.getAttribute("data-library"), function () {
      if (typeof window.MiniSearch !== "function") { return; }
      index = new window.MiniSearch({
        fields: ["title", "where", "text"],
        storeFields: ["kind", "title", "where", "url", "text"],
        searchOptions: { prefix: true, combineWith: "AND", boost: { title: 3 } }
      });
      index.addAll(queued);
      queued = [];
      load(root + form.getAttribute("data-manifest"), function () { show(); });
    });
  }

  function show() {
    while (list.firstChild) { list.removeChild(list.firstChild); }
    var query = input.value.trim();
    if (!query) { list.hidden = true; return; }
    list.hidden = false;
    if (!index) { note("loading…"); return; }
    var seen = {};
    var found = index.search(query).filter(function (hit) {
      if (seen[hit.url]) { return false; }
      seen[hit.url] = true;
      return true;
    }).slice(0, 20);
    found.forEach(function (hit) {
      var item = document.createElement("li");
      var link = document.createElement("a");
      link.href = root + hit.url;
      var kind = document.createElement("span");
      kind.className = "search-kind";
      kind.textContent = hit.kind;
      link.appendChild(kind);
      link.appendChild(document.createTextNode(" " + hit.title + (hit.where ? " · " + hit.where : "")));
      item.appendChild(link);
      item.appendChild(why(hit));
      list.appendChild(item);
    });
    if (!found.length) { note(pending > 0 ? "searching…" : "nothing found"); }
  }

  /* Why a hit matched: the words around the first matched term in its text, the term marked; or
     which of its fields matched when the text did not. */
  var FIELDS = { title: "its name", where: "where it is", text: "its text" };
  function why(hit) {
    var box = document.createElement("span");
    box.className = "search-snippet";
    var text = (hit.text || "").replace(/\s+/g, " "), lower = text.toLowerCase(), at = -1, term = "";
    (hit.terms || []).forEach(function (t) {
      var i = lower.indexOf(t.toLowerCase());
      if (i !== -1 && (at === -1 || i < at)) { at = i; term = t; }
    });
    if (at === -1) {
      var fields = {};
      Object.keys(hit.match || {}).forEach(function (t) { hit.match[t].forEach(function (f) { fields[FIELDS[f] || f] = true; }); });
      box.textContent = "matched " + (Object.keys(fields).join(" and ") || "its name");
      return box;
    }
    var start = Math.max(0, at - 40), end = Math.min(text.length, at + term.length + 80);
    box.appendChild(document.createTextNode((start > 0 ? "…" : "") + text.slice(start, at)));
    var mark = document.createElement("mark");
    mark.textContent = text.slice(at, at + term.length);
    box.appendChild(mark);
    box.appendChild(document.createTextNode(text.slice(at + term.length, end) + (end < text.length ? "…" : "")));
    return box;
  }

  function note(text) {
    var item = document.createElement("li");
    item.className = "muted";
    item.textContent = text;
    list.appendChild(item);
  }

  form.hidden = false;
  input.addEventListener("focus", start);
  input.addEventListener("input", function () { start(); show(); });
  form.addEventListener("submit", function (event) {
    event.preventDefault();
    var first = list.querySelector("a");
    if (first) { window.location.href = first.href; }
  });
}());
