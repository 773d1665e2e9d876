// The overview's asset filter (views/asset_filter.templ): "/" focuses it
// from anywhere on the page but a field, as on GitHub and in Dagster.
document.addEventListener("keydown", function (e) {
  if (e.key !== "/" || e.ctrlKey || e.metaKey || e.altKey || e.defaultPrevented) { return; }
  var t = e.target, q = document.querySelector('[data-testid="asset-filter-q"]');
  if (!q || (t && (t.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(t.tagName)))) { return; }
  e.preventDefault();
  q.focus();
  q.select();
});
