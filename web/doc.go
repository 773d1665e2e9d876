// Package web assembles the HTTP server: echo, middleware (identity, CSRF,
// roles, security headers), the route table with each route's least role,
// the one function that maps errors to responses, the OpenAPI document,
// static files and metrics. Handlers live in handlers; no SQL here.
package web
