// Tessera's own JavaScript: only glue that htmx does not do.
// Send the CSRF token from the page's <meta name="csrf-token"> with every htmx request.
document.addEventListener("htmx:configRequest", function (e) {
  var m = document.querySelector('meta[name="csrf-token"]');
  if (m) { e.detail.headers["X-CSRF-Token"] = m.content; }
});
// Local time (issue 24 item 8): tell the server the browser's time zone in
// the tz cookie; pages show times in it from the next page on, unless the
// user chose a zone on /settings/timezone. The server checks the name.
(function () {
  var tz = "";
  try { tz = Intl.DateTimeFormat().resolvedOptions().timeZone || ""; } catch (e) { return; }
  if (!tz || !/^[A-Za-z0-9_+\-\/]+$/.test(tz)) { return; }
  var m = document.cookie.match(/(?:^|;\s*)tz=([^;]*)/);
  if (!m || m[1] !== tz) {
    document.cookie = "tz=" + tz + "; path=/; max-age=31536000; SameSite=Lax";
  }
})();
// Grid selection (issue 5): with "Select on the grid" on, a click on a tile
// starts the range and a shift-click ends it; the range is ordered by the
// tiles' positions in the asset (data-pos), not by their keys' text, and
// every tile in it is marked. The selection bar counts it.
document.addEventListener("click", function (e) {
  var bar = document.querySelector("[data-selection]");
  var t = e.target.closest && e.target.closest('[data-testid="grid"] a[data-pos]');
  // A bar without the box (a window drawn as buckets) selects nothing.
  if (!bar || !t || !bar.elements.select_mode || !bar.elements.select_mode.checked) { return; }
  e.preventDefault();
  var key = function (a) { return decodeURIComponent(a.getAttribute("href").split("/partitions/")[1] || ""); };
  var grid = t.closest('[data-testid="grid"]'), pos = +t.dataset.pos;
  var first = e.shiftKey && bar.dataset.pos && grid.querySelector('a[data-pos="' + bar.dataset.pos + '"]');
  var lo = first ? Math.min(pos, +bar.dataset.pos) : pos, hi = first ? Math.max(pos, +bar.dataset.pos) : pos;
  if (!first) { bar.dataset.pos = pos; }
  grid.querySelectorAll("a[data-pos]").forEach(function (x) {
    var p = +x.dataset.pos;
    x.classList.toggle("sel", p >= lo && p <= hi);
    if (p === lo) { bar.elements.start.value = key(x); }
    if (p === hi) { bar.elements.end.value = key(x); }
  });
  bar.dispatchEvent(new Event("change", { bubbles: true }));
});
// Form errors next to their field (the new-backfill form). The live preview
// answers a refused form with an error naming its field (data-field); the
// page itself may carry errors too (data-testid="error-NAME"). Each refused
// field is marked aria-invalid (outlined by app.css) and described by its
// message, which stands right after the field.
(function () {
  function formName(field) {
    if (/^selector\.keys/.test(field)) { return "keys"; }
    if (field === "selector.start" || field === "from") { return "start"; }
    if (field === "selector.end" || field === "to") { return "end"; }
    if (/^selector\.dimensions/.test(field)) { return "dimension"; }
    if (/^assets?(\.|\[|$)/.test(field)) { return "asset"; }
    if (/^selector/.test(field)) { return "selector"; }
    return field;
  }
  function mark(form) {
    form.querySelectorAll("[data-field-msg]").forEach(function (m) { m.remove(); });
    form.querySelectorAll('[aria-invalid="true"]').forEach(function (el) {
      el.removeAttribute("aria-invalid");
      el.removeAttribute("aria-describedby");
    });
    var errs = [];
    form.querySelectorAll('.field-error[data-testid^="error-"]').forEach(function (e) {
      errs.push({ field: e.getAttribute("data-testid").slice(6), el: e });
    });
    var pv = document.querySelector('#preview [data-testid="preview-error"][data-field]');
    if (pv && pv.getAttribute("data-field")) {
      errs.push({ field: pv.getAttribute("data-field"), text: pv.textContent });
    }
    var done = {};
    errs.forEach(function (e) {
      var name = formName(e.field);
      var inputs = Array.prototype.filter.call(form.elements, function (el) { return el.name === name; });
      if (!inputs.length || done[name]) { return; }
      done[name] = true;
      var msg = e.el;
      if (!msg) {
        msg = document.createElement("span");
        msg.className = "field-error";
        msg.setAttribute("data-field-msg", "");
        msg.setAttribute("data-testid", "field-msg-" + name);
        msg.textContent = e.text;
      }
      msg.classList.add("field-msg");
      var last = inputs[inputs.length - 1];
      var anchor = last.closest("label") || last;
      if (anchor.nextElementSibling !== msg) { anchor.insertAdjacentElement("afterend", msg); }
      if (!msg.id) { msg.id = "msg-" + name; }
      inputs.forEach(function (el) {
        el.setAttribute("aria-invalid", "true");
        el.setAttribute("aria-describedby", msg.id);
      });
    });
  }
  function markAll() {
    var form = document.querySelector('[data-testid="backfill-form"]');
    if (form) { mark(form); }
  }
  document.addEventListener("DOMContentLoaded", markAll);
  document.addEventListener("htmx:afterSettle", function (e) {
    // A new live preview judges the form as it is now: messages a refused
    // launch rendered into the form are out of date (the preview's own
    // error, if any, is marked again below).
    var form = document.querySelector('[data-testid="backfill-form"]');
    if (form && e.detail.target && e.detail.target.id === "preview") {
      form.querySelectorAll('.field-error[data-testid^="error-"]').forEach(function (m) { m.remove(); });
    }
    markAll();
  });
})();
// New-backfill form: ticking a status under "Only partitions that are"
// picks that choice, before htmx reads the form for the live preview (the
// capture phase runs ahead of the form's own change listener). The statuses
// apply only to that choice, as the keys apply only to the explicit list.
document.addEventListener("change", function (e) {
  var t = e.target;
  if (!t || t.name !== "status" || !t.checked || !t.form || t.form.getAttribute("data-testid") !== "backfill-form") { return; }
  var r = t.form.querySelector('input[name="selector"][value="statuses"]');
  if (r) { r.checked = true; }
}, true);
// A refused launch (400, 409) answers with the form and its errors: show it.
// htmx swaps only 2xx answers by default, so the refusal used to go unseen.
document.addEventListener("htmx:beforeSwap", function (e) {
  var st = e.detail.xhr.status;
  var elt = e.detail.requestConfig && e.detail.requestConfig.elt;
  if ((st === 400 || st === 409) && elt && elt.closest && elt.closest('[data-testid="backfill-form"]')) {
    e.detail.shouldSwap = true;
    e.detail.isError = false;
    return;
  }
  // A request that replaces the whole page (Launch) shows the error page the
  // server answered (403, 429, 503 when the database cannot be written…):
  // htmx leaves the page as it was on an error, and nothing said why.
  if (st >= 400 && e.detail.target === document.body) {
    e.detail.shouldSwap = true;
    e.detail.isError = false;
  }
});
// A tab that is hidden gives its live stream back and takes it again when
// shown (the "connected" event then refreshes what changed meanwhile).
// Over HTTP/1.1 a browser opens at most 6 connections to a server, and
// every page with a live section (asset pages, the backfills list, running
// backfills) holds one: a seventh tab used to wait for ever.
document.addEventListener("visibilitychange", function () {
  if (!window.htmx || !htmx.swap) { return; }
  var hide = document.hidden;
  document.querySelectorAll(hide ? "[sse-connect]" : "[data-sse-paused]").forEach(function (el) {
    // Choices made inside it (Cancel's "terminate" box, a chunk filter)
    // are properties: write them as attributes so the copy keeps them.
    el.querySelectorAll("input[type=checkbox], input[type=radio]").forEach(function (c) { c.toggleAttribute("checked", c.checked); });
    el.querySelectorAll("option").forEach(function (o) { o.toggleAttribute("selected", o.selected); });
    var copy = el.cloneNode(true);
    if (hide) {
      copy.setAttribute("data-sse-paused", el.getAttribute("sse-connect"));
      copy.removeAttribute("sse-connect");
    } else {
      copy.setAttribute("sse-connect", el.getAttribute("data-sse-paused"));
      copy.removeAttribute("data-sse-paused");
    }
    // outerHTML through htmx: the old element is cleaned up (its
    // EventSource closed) and the new one processed (connected).
    htmx.swap(el, copy.outerHTML, { swapStyle: "outerHTML" });
  });
});
// A live section whose stream the server refused (429: this session holds
// its most streams; 503: the server does) says so instead of going stale
// without a word. EventSource cannot read a refusal's body, so the note asks
// once with ?once=1 for the server's message. The sse extension keeps
// retrying (backing off to a minute); the note goes when a stream opens.
document.addEventListener("htmx:sseError", function (e) {
  var el = e.target, src = e.detail && e.detail.source;
  if (!el || !el.querySelector || !src || src.readyState !== EventSource.CLOSED || el.querySelector(":scope > .live-note")) { return; }
  var note = document.createElement("p");
  note.className = "live-note";
  note.setAttribute("role", "status");
  note.setAttribute("data-testid", "live-note");
  note.textContent = "Live updates are off for now: reload the page to see changes.";
  el.insertBefore(note, el.firstChild);
  fetch(src.url + (src.url.indexOf("?") < 0 ? "?" : "&") + "once=1", { headers: { Accept: "application/json" }, credentials: "same-origin" })
    .then(function (r) { return r.ok ? null : r.json(); })
    .then(function (b) {
      if (b && b.error && b.error.message) { note.textContent = "Live updates are off: " + b.error.message + "."; }
    })
    .catch(function () {});
});
document.addEventListener("htmx:sseOpen", function (e) {
  var n = e.target && e.target.querySelector && e.target.querySelector(":scope > .live-note");
  if (n) { n.remove(); }
});
// The status board reloads itself (data-refresh seconds, htmx every Ns). A
// reload that did not bring a board back (signed out: the sign-in page; an
// error; the server unreachable) keeps the board as it was, its "Updated"
// time saying how old it is, and says why beside it.
(function () {
  function stopped(e, why) {
    var t = e.detail.elt && e.detail.elt.closest && e.detail.elt.closest("[data-refresh]");
    var s = t && t.querySelector('[data-testid="refresh-stopped"]');
    if (s) { s.textContent = "· not refreshed since: " + why; s.hidden = false; }
  }
  document.addEventListener("htmx:beforeSwap", function (e) {
    var t = e.detail.target;
    if (!t || !t.hasAttribute || !t.hasAttribute("data-refresh")) { return; }
    var x = e.detail.xhr;
    if (x.status !== 200 || x.responseText.indexOf('id="status-board"') < 0) {
      e.detail.shouldSwap = false;
      stopped(e, /\/login/.test(x.responseURL || "") ? "signed out, sign in again" : "the server answered " + x.status);
    }
  });
  document.addEventListener("htmx:sendError", function (e) { stopped(e, "the server is unreachable"); });
})();
// A matrix grid runs oldest to newest, left to right: where it is wider
// than its box (a phone), it opens scrolled to its newest windows.
(function () {
  function toNewest(root) {
    (root || document).querySelectorAll('.grid[data-mode="matrix"]').forEach(function (g) { g.scrollLeft = g.scrollWidth; });
  }
  document.addEventListener("DOMContentLoaded", function () { toNewest(); });
  document.addEventListener("htmx:afterSwap", function (e) { toNewest(e.detail.target); });
})();
