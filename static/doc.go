// Package static serves the stylesheet, Tessera's few lines of JavaScript, the
// favicon and the vendored front-end packages that the build copies from
// node_modules (see Makefile: htmx and its SSE extension, pinned in
// package-lock.json).
package static
