package static

import (
	"embed"
	"net/http"
)

//go:embed app.css app.js staleness.css favicon.svg vendor
var files embed.FS

// Handler serves the embedded files with a cache lifetime of an hour.
func Handler() http.Handler {
	fs := http.FileServerFS(files)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "public, max-age=3600")
		fs.ServeHTTP(w, r)
	})
}
