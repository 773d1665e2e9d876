// Package views holds the templ components and the view models they render.
// Handlers fill the models; components never query anything and import
// nothing of Tessera's. templ escapes every user string.
package views
