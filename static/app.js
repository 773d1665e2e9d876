// Tessera's own JavaScript: only glue that htmx does not do.
// Send the CSRF token from the page's <meta name="csrf-token"> with every htmx request.
document.addEventListener("htmx:configRequest", function (e) {
  var m = document.querySelector('meta[name="csrf-token"]');
  if (m) { e.detail.headers["X-CSRF-Token"] = m.content; }
});
