// Package handlers holds one small file per page or API action, all methods
// of Handler. Handlers parse input, call the catalog, the engine (jobs) and
// the store, and render views; errors go back to web's single error mapper.
//
// Here messages are worded for users, from error values (codes, fields,
// parameters), never by rewriting another layer's text. No SQL here.
package handlers
