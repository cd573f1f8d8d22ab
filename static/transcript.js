/* evalsite: a case's full conversation (evalsite/site/transcripts.py) and every evaluator's
   explanation, each in a <details>; a long text shows its start with a "show all" button that
   shows it whole. Every text is put on the page with textContent. */
(function () {
  "use strict";
  var data = window.evalsite && window.evalsite.data;
  if (!data) { return; }
  var el = data.el, format = data.format;
  var LONG_CHARS = 600, LONG_LINES = 12;

  /* A text in <pre class="text">; a long one is folded with a "show all" toggle. A text cut to
     max_field_chars says so; with `more` (a function promising [whole text, characters still left
     out] from the part's .whole.js) its note has a button that puts the whole text in place. */
  function longText(text, omitted, className, more) {
    var box = document.createDocumentFragment();
    var pre = el("pre", "text" + (className ? " " + className : ""), text);
    box.appendChild(pre);
    if (text.length > LONG_CHARS || text.split("\n").length > LONG_LINES) {
      var toggle = el("button", "show-all", "show all (" + text.length.toLocaleString("en-US") + " characters)");
      toggle.type = "button";
      toggle.addEventListener("click", function () {
        var folded = !pre.classList.toggle("unfolded");
        toggle.textContent = folded ? "show all (" + text.length.toLocaleString("en-US") + " characters)" : "show less";
      });
      box.appendChild(toggle);
    }
    if (omitted) {
      var note = el("p", "cut", "… " + omitted.toLocaleString("en-US") +
        " more characters not shown (max_field_chars); the whole text is in the run's cases.jsonl. ");
      if (more) {
        var button = el("button", "show-whole", "show the whole text");
        button.type = "button";
        button.addEventListener("click", function () {
          more().then(function (found) {
            if (!found) { note.textContent = "The whole text is in the run's cases.jsonl."; return; }
            pre.textContent = found[0];
            pre.classList.add("unfolded");
            note.textContent = found[1] ? "… " + found[1].toLocaleString("en-US") +
              " characters beyond these are in the run's cases.jsonl only." : "";
            note.hidden = !found[1];
          });
        });
        note.appendChild(button);
      }
      box.appendChild(note);
    }
    return box;
  }

  function figures(f) {
    var parts = [];
    if (f.latency_ms !== undefined) { parts.push(format.ms(f.latency_ms)); }
    if (f.input_tokens !== undefined || f.output_tokens !== undefined) {
      parts.push(format.count(f.input_tokens) + " / " + format.count(f.output_tokens) + " tokens");
    }
    if (f.cost_usd !== undefined) { parts.push(format.usd(f.cost_usd)); }
    return parts.join(" · ");
  }

  function message(m, index) {
    var li = el("li", "message message-" + m.role.replace(/[^a-z]/g, ""));
    var head = el("p", "message-head");
    head.appendChild(el("strong", "", m.role));
    head.appendChild(el("span", "muted", " #" + (index + 1)));
    if (m.name) { head.appendChild(el("span", "", " " + m.name)); }
    if (m.answers) { head.appendChild(el("span", "muted", " result of call " + m.answers)); }
    if (m.figures) { head.appendChild(el("span", "message-figures muted", " — " + figures(m.figures))); }
    li.appendChild(head);
    if (m.text !== undefined) { li.appendChild(longText(m.text, m.text_omitted)); }
    (m.calls || []).forEach(function (call) {
      var box = el("div", "tool-call");
      var title = el("p", "tool-call-head");
      title.appendChild(el("span", "", "tool call "));
      title.appendChild(el("code", "", call.name));
      if (call.id) { title.appendChild(el("span", "muted", " " + call.id)); }
      box.appendChild(title);
      if (call.arguments !== undefined) { box.appendChild(longText(call.arguments, call.arguments_omitted, "arguments")); }
      li.appendChild(box);
    });
    return li;
  }

  /* The conversation, collapsed under a summary that counts its messages and tool calls. */
  function transcript(messages) {
    var calls = messages.reduce(function (n, m) { return n + (m.calls ? m.calls.length : 0); }, 0);
    var details = el("details", "transcript");
    details.appendChild(el("summary", "", "Transcript: " + messages.length + " messages" +
      (calls ? ", " + calls + " tool call" + (calls === 1 ? "" : "s") : "")));
    var list = el("ol", "messages");
    messages.forEach(function (m, i) { list.appendChild(message(m, i)); });
    details.appendChild(list);
    return details;
  }

  /* One evaluator's explanation (a judge's reason, a failed check's detail, an error). */
  function explanation(s) {
    var text = s.error || s.detail;
    if (!text) { return null; }
    var details = el("details", "explanation");
    details.appendChild(el("summary", "", s.error ? "error" : "why"));
    details.appendChild(longText(text, 0, s.error ? "error" : "detail"));
    return details;
  }

  /* 2–4 answers' whole outputs in columns; the toggle marks each column's words against the first. */
  var MAX_COLUMNS = 4;

  function sideBySide(answers) {
    var entries = [];
    answers.forEach(function (answer) {
      answer.cases.forEach(function (c) {
        if (c.output !== null) {
          entries.push({ label: answer.run.label + (answer.cases.length > 1 ? " #" + c.repeat : ""), text: c.output });
        }
      });
    });
    var details = el("details", "side-by-side-view");
    details.appendChild(el("summary", "", "Side by side: the whole outputs of " + Math.min(entries.length, MAX_COLUMNS) +
      " of " + entries.length + " answers"));
    if (entries.length < 2) { details.hidden = true; return details; }
    var choose = el("p", "side-by-side-choose");
    var boxes = entries.map(function (entry, n) {
      var label = el("label", "", " " + entry.label + " ");
      var box = el("input");
      box.type = "checkbox";
      box.checked = n < MAX_COLUMNS;
      label.insertBefore(box, label.firstChild);
      choose.appendChild(label);
      box.addEventListener("change", draw);
      return box;
    });
    var diffLabel = el("label", "diff-toggle", " mark the differences from the first column");
    var diff = el("input");
    diff.type = "checkbox";
    diffLabel.insertBefore(diff, diffLabel.firstChild);
    diff.addEventListener("change", draw);
    var grid = el("div", "side-by-side");
    details.appendChild(choose);
    details.appendChild(el("p", "", "")).appendChild(diffLabel);
    details.appendChild(grid);

    function column(entry, first) {
      var node = el("div", "side-by-side-column");
      node.appendChild(el("h3", "", entry.label));
      var pre = el("pre", "text unfolded");
      var pieces = first && diff.checked && window.evalsite.wordDiff ? window.evalsite.wordDiff(first.text, entry.text) : null;
      if (pieces) {
        pieces.forEach(function (piece) {
          if (piece[0] === "same") { pre.appendChild(document.createTextNode(piece[1])); return; }
          pre.appendChild(el(piece[0], "", piece[1]));
        });
      } else { pre.textContent = entry.text; }
      node.appendChild(pre);
      return node;
    }

    function draw() {
      var picked = entries.filter(function (entry, n) { return boxes[n].checked; });
      boxes.forEach(function (box) { box.disabled = !box.checked && picked.length >= MAX_COLUMNS; });
      while (grid.firstChild) { grid.removeChild(grid.firstChild); }
      picked.forEach(function (entry, n) { grid.appendChild(column(entry, n ? picked[0] : null)); });
    }
    draw();
    return details;
  }

  window.evalsite.transcript = { render: transcript, explanation: explanation, longText: longText, sideBySide: sideBySide };
}());
