/* evalsite: human review in the browser. Every case the run page (or an item page) draws gets
   pass / fail / unsure buttons and a comment box; ratings are kept in this browser's localStorage
   (one entry per project, run, item and repeat) until the reviewer downloads them as a JSON Lines
   file that `evalsite review import FILE` records (docs/reference/commands/review.md). Nothing is
   sent anywhere: the page works from file:// as from any static host. */
(function () {
  "use strict";
  var data = window.evalsite && window.evalsite.data;
  var holder = document.querySelector("[data-review-project]");
  if (!data || !holder || !window.localStorage) { return; }
  var el = data.el, project = holder.getAttribute("data-review-project");
  var PREFIX = "evalsite-review:", RATINGS = ["pass", "fail", "unsure"];
  var reviewerKey = "evalsite-reviewer:" + JSON.stringify(project);
  var listeners = [];

  function key(run, item, repeat) { return PREFIX + JSON.stringify([project, run, item, repeat]); }

  function read(run, item, repeat) {
    try { return JSON.parse(window.localStorage.getItem(key(run, item, repeat)) || "null"); } catch (e) { return null; }
  }

  function write(run, item, repeat, rating, comment) {
    var k = key(run, item, repeat);
    if (!rating && !comment) { window.localStorage.removeItem(k); } else {
      window.localStorage.setItem(k, JSON.stringify({ project: project, run_id: run, item_id: item, repeat: repeat,
                                                      rating: rating || null, comment: comment || "",
                                                      at: new Date().toISOString() }));
    }
    listeners.forEach(function (listener) { listener(); });
  }

  /* This project's ratings, in a fixed order (run, item, repeat). */
  function stored() {
    var found = [];
    for (var i = 0; i < window.localStorage.length; i += 1) {
      var k = window.localStorage.key(i);
      if (k.indexOf(PREFIX) !== 0) { continue; }
      var parts;
      try { parts = JSON.parse(k.slice(PREFIX.length)); } catch (e) { continue; }
      if (parts[0] !== project) { continue; }
      var value = read(parts[1], parts[2], parts[3]);
      if (value && value.rating) { found.push(value); }
    }
    return found.sort(function (a, b) {
      return a.run_id < b.run_id ? -1 : a.run_id > b.run_id ? 1 : a.item_id < b.item_id ? -1 : a.item_id > b.item_id ? 1 : a.repeat - b.repeat;
    });
  }

  /* The ratings file, exactly as `evalsite review import` reads it: one JSON object a line. */
  function ratingsFile() {
    var reviewer = window.localStorage.getItem(reviewerKey) || "";
    return stored().map(function (r) {
      var line = { run_id: r.run_id, item_id: r.item_id, repeat: r.repeat, rating: r.rating, comment: r.comment, at: r.at };
      if (reviewer) { line.reviewer = reviewer; }
      return JSON.stringify(line) + "\n";
    }).join("");
  }

  /* The buttons and comment box of one case. */
  function controls(run, c) {
    var box = el("div", "review");
    box.setAttribute("data-review-case", JSON.stringify([run, c.item, c.repeat]));
    var saved = read(run, c.item, c.repeat) || {};
    var buttons = RATINGS.map(function (rating) {
      var button = el("button", "review-" + rating, rating);
      button.type = "button";
      button.setAttribute("aria-pressed", saved.rating === rating ? "true" : "false");
      button.addEventListener("click", function () {
        var now = read(run, c.item, c.repeat) || {};
        var chosen = now.rating === rating ? null : rating;  // a second click takes the rating back
        write(run, c.item, c.repeat, chosen, comment.value);
        buttons.forEach(function (b, n) { b.setAttribute("aria-pressed", RATINGS[n] === chosen ? "true" : "false"); });
      });
      box.appendChild(button);
      return button;
    });
    var comment = el("textarea", "review-comment");
    comment.rows = 2;
    comment.placeholder = "comment";
    comment.setAttribute("aria-label", "comment on " + c.item + " #" + c.repeat);
    comment.value = saved.comment || "";
    comment.addEventListener("input", function () {
      var now = read(run, c.item, c.repeat) || {};
      write(run, c.item, c.repeat, now.rating, comment.value);
    });
    box.appendChild(comment);
    return box;
  }

  /* The panel above the listing: how many ratings this browser keeps, the reviewer, the download. */
  function panel() {
    var node = el("div", "review-panel");
    var count = el("span", "review-count");
    var name = el("input", "review-reviewer");
    name.type = "text";
    name.placeholder = "your name";
    name.value = window.localStorage.getItem(reviewerKey) || "";
    name.addEventListener("change", function () { window.localStorage.setItem(reviewerKey, name.value.trim()); });
    var button = el("button", "review-download", "download ratings");
    button.type = "button";
    button.addEventListener("click", function () {
      var link = data.download("ratings.jsonl", "application/x-ndjson", ratingsFile());
      link.hidden = true;
      document.body.appendChild(link);
      link.click();
      document.body.removeChild(link);
    });
    var forget = el("button", "review-forget", "forget these ratings");
    forget.type = "button";
    forget.title = "remove this project's ratings from this browser (after `evalsite review import`)";
    forget.addEventListener("click", function () {
      stored().forEach(function (r) { window.localStorage.removeItem(key(r.run_id, r.item_id, r.repeat)); });
      document.querySelectorAll("div.review button[aria-pressed=true]").forEach(function (b) { b.setAttribute("aria-pressed", "false"); });
      document.querySelectorAll("div.review textarea").forEach(function (t) { t.value = ""; });
      listeners.forEach(function (listener) { listener(); });
    });
    var label = el("label", "", "Reviewer ");
    label.appendChild(name);
    node.appendChild(el("strong", "", "Human review: "));
    node.appendChild(count);
    node.appendChild(document.createTextNode(" "));
    node.appendChild(label);
    node.appendChild(document.createTextNode(" "));
    node.appendChild(button);
    node.appendChild(el("span", "muted", " then `evalsite review import ratings.jsonl`. Ratings stay in this browser until you "));
    node.appendChild(forget);
    node.appendChild(el("span", "muted", "."));
    function update() {
      var n = stored().length;
      count.textContent = n + (n === 1 ? " rating" : " ratings") + " kept in this browser for " + project + ".";
      button.disabled = forget.disabled = n === 0;
    }
    listeners.push(update);
    update();
    return node;
  }

  holder.insertBefore(panel(), holder.firstChild);
  window.evalsite.review = { controls: controls, ratingsFile: ratingsFile };
}());
