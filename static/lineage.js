// The asset page's lineage graph (views/lineage.templ): scroll its box so
// that the asset itself is in the middle, its upstream left and its
// downstream right of it, however narrow the window.
document.addEventListener("DOMContentLoaded", function () {
  document.querySelectorAll('[data-testid="lineage-box"]').forEach(function (box) {
    var cur = box.querySelector("a.cur rect");
    if (!cur) { return; }
    var b = box.getBoundingClientRect(), r = cur.getBoundingClientRect();
    box.scrollLeft += (r.left + r.width / 2) - (b.left + box.clientWidth / 2);
    box.scrollTop += (r.top + r.height / 2) - (b.top + box.clientHeight / 2);
  });
});
