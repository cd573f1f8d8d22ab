/* evalsite: an item page, drawn from this bucket's part of every run's data (data/runs/<run>/). */
(function () {
  "use strict";
  var data = window.evalsite && window.evalsite.data;
  var box = document.querySelector(".item-page");
  if (!data || !box) { return; }
  var el = data.el, format = data.format;
  var root = box.getAttribute("data-root"), bucket = box.getAttribute("data-bucket");
  var runs = JSON.parse(box.getAttribute("data-runs")), redacted = box.getAttribute("data-redacted") === "1";
  var metadataPath = box.getAttribute("data-metadata");

  function hasBucket(run) {
    for (var i = 0; i < run.buckets.length; i += 2) { if (run.buckets.substr(i, 2) === bucket) { return true; } }
    return false;
  }

  function heading(level, text) { return el("h" + level, "", text); }

  function texts(item, metadata) {
    var grid = el("div", "item-texts");
    [["Input", item.input, item.cut.input], ["Expected", item.expected, item.cut.expected]].forEach(function (part) {
      var cell = el("div");
      cell.appendChild(heading(2, part[0]));
      cell.appendChild(data.textBlock(part[1], part[2]));
      grid.appendChild(cell);
    });
    if (metadata) {
      var cell = el("div");
      cell.appendChild(heading(2, "Metadata"));
      cell.appendChild(data.textBlock(metadata));
      grid.appendChild(cell);
    }
    return grid;
  }

  function answersTable(item) {
    var table = el("table", "data answers"), head = el("tr");
    var shown = window.evalsite.transcript, review = window.evalsite.review;
    ["run", "repeat", "status", "score"].concat(redacted ? [] : ["output"]).concat(["evaluators", "latency", "tokens in/out", "cost"])
      .concat(review ? ["review"] : []).forEach(function (name) { head.appendChild(el("th", "", name)); });
    var thead = el("thead");
    thead.appendChild(head);
    table.appendChild(thead);
    var body = el("tbody");
    item.answers.forEach(function (answer) {
      answer.cases.forEach(function (c, n) {
        var tr = el("tr", "case case-" + c.status);
        if (n === 0) {
          var who = el("td");
          who.rowSpan = answer.cases.length;
          var link = el("a");
          link.href = root + answer.run.href;
          link.title = answer.run.run;
          link.appendChild(el("strong", "", answer.run.arm));
          who.appendChild(link);
          if (answer.run.experiment) { who.appendChild(el("span", "muted", " " + answer.run.experiment)); }
          who.appendChild(el("br"));
          who.appendChild(el("span", "muted", answer.run.run.slice(0, 16)));
          tr.appendChild(who);
        }
        tr.appendChild(el("td", "num", c.repeat));
        var st = el("td");
        st.appendChild(el("span", "badge badge-" + c.status, c.status));
        if (c.error) { st.appendChild(el("pre", "text error", c.error)); }
        tr.appendChild(st);
        tr.appendChild(el("td", "num", format.number(c.score)));
        if (!redacted) {
          var out = el("td", "output");
          if (c.output === null) { out.appendChild(el("span", "muted", "—")); } else {
            var more = function () { return data.whole(root, c, "out"); };
            var block = shown ? shown.longText(c.output, c.cut.out, "", more) : el("pre", "text", c.output);
            var pre = block.nodeName === "PRE" ? block : block.firstChild;
            pre.setAttribute("data-answer", answer.run.label + (answer.cases.length > 1 ? " #" + c.repeat : ""));
            out.appendChild(block);
            if (c.cut.out && !shown) { out.appendChild(el("p", "cut", "… " + c.cut.out.toLocaleString("en-US") + " more characters not shown.")); }
          }
          if (shown && c.transcript) { out.appendChild(shown.render(c.transcript)); }
          tr.appendChild(out);
        }
        var scores = el("td");
        c.scores.forEach(function (s, i) {
          var text = s.evaluator + " " + format.number(s.score) + (s.passed === true ? " ✓" : s.passed === false ? " ✗" : "");
          scores.appendChild(document.createTextNode(text));
          if (s.label) { scores.appendChild(document.createTextNode(" ")); scores.appendChild(el("em", "", s.label)); }
          if (s.error) { scores.appendChild(el("span", "problems", " error")); }
          var why = shown ? shown.explanation(s) : null;
          if (why) { scores.appendChild(why); }
          if (i < c.scores.length - 1) { scores.appendChild(el("br")); }
        });
        tr.appendChild(scores);
        tr.appendChild(el("td", "num", format.ms(c.latency)));
        tr.appendChild(el("td", "num", format.count(c.tokensIn) + " / " + format.count(c.tokensOut)));
        tr.appendChild(el("td", "num", format.usd(c.cost)));
        if (review) {
          var rate = el("td", "review-cell");
          rate.appendChild(review.controls(answer.run.run, c));
          tr.appendChild(rate);
        }
        body.appendChild(tr);
      });
    });
    table.appendChild(body);
    var scroll = el("div", "scroll");
    scroll.appendChild(table);
    return scroll;
  }

  function picker() {
    var node = el("div", "pair-picker");
    node.hidden = true;
    var p = el("p"), left = el("label", "", "Diff "), right = el("label", "", " against ");
    left.appendChild(el("select", "pick-left"));
    right.appendChild(el("select", "pick-right"));
    p.appendChild(left);
    p.appendChild(right);
    node.appendChild(p);
    node.appendChild(el("pre", "text worddiff-out"));
    return node;
  }

  function section(item, metadata) {
    var node = el("section", "item");
    node.id = item.anchor;
    node.setAttribute("data-pair-scope", "");
    var title = heading(1, "Item ");
    title.appendChild(el("code", "", item.id));
    node.appendChild(title);
    if (!redacted) { node.appendChild(texts(item, metadata)); }
    node.appendChild(heading(2, "Every run's answers"));
    node.appendChild(answersTable(item));
    if (!redacted) { node.appendChild(picker()); }
    if (!redacted && window.evalsite.transcript) { node.appendChild(window.evalsite.transcript.sideBySide(item.answers)); }
    return node;
  }

  var wanted = runs.filter(hasBucket);
  var metadata = metadataPath ? data.load(root, metadataPath) : Promise.resolve(null);
  Promise.all([metadata].concat(wanted.map(function (run) { return data.runCases(root, run.folder, bucket); }))).then(function (loaded) {
    var found = {}, order = [], meta = loaded[0] || {};
    wanted.forEach(function (run, n) {
      var byItem = {};
      loaded[n + 1].forEach(function (c) { (byItem[c.item] = byItem[c.item] || []).push(c); });
      Object.keys(byItem).forEach(function (id) {
        var cases = byItem[id].sort(function (a, b) { return a.repeat - b.repeat; });
        var item = found[id];
        if (!item) {
          item = found[id] = { id: id, anchor: cases[0].anchor, ord: cases[0].ord, input: null, expected: null, cut: {}, answers: [] };
          order.push(item);
        }
        var first = cases[0];
        if (item.input === null && first.input !== null) { item.input = first.input; item.cut.input = first.cut["in"]; }
        if (item.expected === null && first.expected !== null) { item.expected = first.expected; item.cut.expected = first.cut.exp; }
        item.answers.push({ run: run, cases: cases });
      });
    });
    order.sort(function (a, b) { return a.ord - b.ord || (a.id < b.id ? -1 : 1); });
    order.forEach(function (item) { box.appendChild(section(item, meta[item.id])); });
    if (!order.length) { box.appendChild(el("p", "muted", "No item on this page.")); }
    box.querySelectorAll(".pair-picker").forEach(function (node) { window.evalsite.makePicker(node); });
    var target = window.location.hash ? document.getElementById(decodeURIComponent(window.location.hash.slice(1))) : null;
    if (target) { target.classList.add("targeted"); target.scrollIntoView(); }
  });
}());
