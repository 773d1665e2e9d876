// Tessera's own JavaScript: only glue that htmx does not do.
// Send the CSRF token from the page's <meta name="csrf-token"> with every htmx request.
document.addEventListener("htmx:configRequest", function (e) {
  var m = document.querySelector('meta[name="csrf-token"]');
  if (m) { e.detail.headers["X-CSRF-Token"] = m.content; }
});
// Grid selection (issue 5): with "Select on the grid" on, a click on a tile
// starts the range and a shift-click ends it; the selection bar counts it.
document.addEventListener("click", function (e) {
  var bar = document.querySelector("[data-selection]");
  var t = e.target.closest && e.target.closest('[data-testid="grid"] a');
  if (!bar || !t || !bar.elements.select_mode.checked) { return; }
  e.preventDefault();
  var key = decodeURIComponent((t.getAttribute("href").split("/partitions/")[1] || ""));
  var s = bar.elements.start, en = bar.elements.end;
  if (e.shiftKey && s.value) { if (key < s.value) { en.value = s.value; s.value = key; } else { en.value = key; } }
  else { s.value = key; en.value = key; document.querySelectorAll(".t.sel").forEach(function (x) { x.classList.remove("sel"); }); }
  t.classList.add("sel");
  bar.dispatchEvent(new Event("change", { bubbles: true }));
});
