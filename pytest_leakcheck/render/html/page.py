"""The review page's style and its one script, as static strings, and the policy that admits only it.

The script filters the cards (kind, split pair, severity, status, a path
search), keeps every count on the page in step with what is shown (the
"N of M shown" line, each group's heading and the navigation, and in each
filter menu how many findings each choice would show), and writes the
verdict commands for exactly the findings shown, ready to copy in one go.

It reads only ``data-*`` attributes the renderer wrote (HTML-escaped like
everything else), never builds markup from them, and sets only ``hidden``,
text content and a textarea's value.  The Content-Security-Policy names the
script by its SHA-256, so no other script, inline or injected, can run.
"""

from __future__ import annotations

import base64
import hashlib

STYLE = """
body{font:14px/1.4 system-ui,sans-serif;margin:0 2em 4em;color:#222;background:#fafafa}
h1{font-size:1.4em}h2{font-size:1.15em;margin-top:2em;border-bottom:1px solid #ccc}
.summary td,.summary th{padding:0 1em 0 0;text-align:left}
.filters{position:sticky;top:0;z-index:2;background:#fafafa;border-bottom:1px solid #ccc;padding:.5em 0;
 display:flex;flex-wrap:wrap;gap:.4em 1.2em;align-items:center}
.filters input{width:16em}#shown{font-weight:bold}
#verdicts textarea{width:100%;font:12px monospace}
.finding{display:flex;flex-wrap:wrap;gap:1em;background:#fff;border:1px solid #ddd;
 border-left:6px solid #c00;margin:.8em 0;padding:.6em;min-height:180px;
 content-visibility:auto;contain-intrinsic-size:auto 230px}
.finding[hidden],.group[hidden],nav li[hidden]{display:none}
.finding.warning{border-left-color:#e90}.finding.known{border-left-color:#888;opacity:.85}
.finding header{flex-basis:100%}.finding header code{margin:0 .6em}
.badge{display:inline-block;padding:0 .5em;margin-right:.3em;border-radius:3px;font-size:.85em;
 color:#fff;background:#c00}.badge.warning{background:#e90}.badge.new{background:#06c}
.badge.known{background:#888}.pair{color:#555}
.images{display:flex;gap:8px;position:relative;align-self:flex-start;flex-wrap:wrap;max-width:812px}
figure{margin:0;width:128px}
figure img,.noimg{width:128px;height:128px;object-fit:contain;background:#eee;display:block}
img.heat{image-rendering:pixelated}.noimg{line-height:128px;text-align:center;color:#888;font-size:.8em}
svg.points{position:absolute;left:0;top:0;pointer-events:none}
svg.points line{stroke:#0f0;stroke-width:1}svg.points circle{fill:none;stroke:#0f0}
figcaption{font-size:.75em;word-break:break-all;color:#444}
.details{flex:1;min-width:20em}.details th{text-align:left;font-weight:normal;color:#555;padding-right:1em}
.evidence{padding-left:1.2em;overflow-wrap:anywhere;margin:.3em 0}
.members{padding-left:1.2em;word-break:break-all}.split{color:#06c}
.judge code{user-select:all;background:#f2f2f2;padding:0 .3em}.message{color:#a00}
nav li{margin:.1em 0}
.overview h3{font-size:1em;margin:1em 0 .3em}.chart text{font-size:11px;fill:#333}
.counts td,.counts th{padding:0 .8em 0 0;text-align:left}
.counts i{display:inline-block;width:.8em;height:.8em;margin-right:.3em;vertical-align:middle}
.hists{display:flex;flex-wrap:wrap;gap:1.5em}.hist{width:auto}
.hist figcaption{font-size:.8em;max-width:420px;word-break:normal}
"""

SCRIPT = """
(function () {
  "use strict";
  var form = document.getElementById("filters");
  if (!form) return;
  var facets = ["kind", "pair", "severity", "status"];
  var cards = Array.prototype.map.call(document.querySelectorAll("article.finding"), function (el) {
    var d = el.dataset;
    return {el: el, id: d.id, kind: d.kind, pair: d.pair, severity: d.severity, status: d.status,
            paths: d.paths, group: el.parentNode};
  });
  var groups = Array.prototype.slice.call(document.querySelectorAll("section.group"));
  var commands = document.getElementById("commands");
  var verdict = document.getElementById("verdict");
  var labels = {};
  facets.forEach(function (f) {
    Array.prototype.forEach.call(form.elements[f].options, function (o) {
      labels[f + "\\u0000" + o.value] = o.textContent;
    });
  });

  function wanted() {
    var w = {q: form.elements.q.value.trim().toLowerCase()};
    facets.forEach(function (f) { w[f] = form.elements[f].value; });
    return w;
  }
  function passes(c, w, skip) {
    for (var i = 0; i < facets.length; i++) {
      var f = facets[i];
      if (f !== skip && w[f] && c[f] !== w[f]) return false;
    }
    return !w.q || c.paths.indexOf(w.q) >= 0;
  }
  function apply() {
    var w = wanted(), shown = [], per = new Map();
    cards.forEach(function (c) {
      var ok = passes(c, w, null);
      if (c.el.hidden === ok) c.el.hidden = !ok;
      if (ok) { shown.push(c.id); per.set(c.group, (per.get(c.group) || 0) + 1); }
    });
    groups.forEach(function (g) {
      var n = per.get(g) || 0;
      g.hidden = n === 0;
      g.querySelector("h2 .n").textContent = n;
      var item = document.querySelector('nav li[data-group="' + g.id + '"]');
      if (item) { item.hidden = n === 0; item.querySelector(".n").textContent = n; }
    });
    // Each menu says how many findings each of its choices would show, given the other filters.
    facets.forEach(function (f) {
      var counts = {}, all = 0;
      cards.forEach(function (c) { if (passes(c, w, f)) { counts[c[f]] = (counts[c[f]] || 0) + 1; all++; } });
      Array.prototype.forEach.call(form.elements[f].options, function (o) {
        var n = o.value ? (counts[o.value] || 0) : all;
        o.textContent = labels[f + "\\u0000" + o.value] + " (" + n + ")";
      });
    });
    document.getElementById("shown").textContent = shown.length + " of " + cards.length + " shown";
    var v = verdict.value;
    commands.value = shown.map(function (id) {
      return "leakcheck judge " + id + " " + v + ' --reason "..."\\n';
    }).join("");
  }
  var pending = 0;
  form.addEventListener("input", function () {
    // Typing in the search box: one pass per pause, not per key.
    clearTimeout(pending);
    pending = setTimeout(apply, 60);
  });
  form.addEventListener("change", apply);
  form.addEventListener("submit", function (e) { e.preventDefault(); apply(); });
  verdict.addEventListener("change", apply);
  document.getElementById("copy").addEventListener("click", function () {
    var done = function () {
      document.getElementById("copied").textContent =
        "copied " + (commands.value.match(/\\n/g) || []).length + " commands";
    };
    commands.select();
    if (navigator.clipboard && navigator.clipboard.writeText) {
      navigator.clipboard.writeText(commands.value).then(done, function () {
        if (document.execCommand("copy")) done();
      });
    } else if (document.execCommand("copy")) { done(); }
  });
  // The page arrives showing everything, with every command: only the menus' counts are
  // missing, so the first pass waits until the first screen is painted.
  requestAnimationFrame(function () {
    setTimeout(function () { apply(); document.documentElement.dataset.ready = "1"; }, 0);
  });
})();
"""


def _hash(script: str) -> str:
    return "sha256-" + base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode("ascii")


#: Images only from the page itself, inline style, and the one script above by its hash.
CSP = f"default-src 'none'; img-src data:; style-src 'unsafe-inline'; script-src '{_hash(SCRIPT)}'"
