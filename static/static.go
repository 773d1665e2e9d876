package static

import (
	"embed"
	"io/fs"
	"net/http"
	"path"
	"strings"
)

//go:embed app.css app.js staleness.css automation.css lineage.css lineage.js search.css search.js favicon.svg vendor
var files embed.FS

// Handler serves the embedded files with a cache lifetime of an hour. A
// directory is not found: no listing, and no redirect to its name with a
// slash (the router removes trailing slashes, so that went round forever).
func Handler() http.Handler {
	srv := http.FileServerFS(files)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := strings.TrimPrefix(path.Clean("/"+r.URL.Path), "/")
		if st, err := fs.Stat(files, name); err != nil || st.IsDir() {
			http.Error(w, "404 page not found: no such file under /static", http.StatusNotFound)
			return
		}
		w.Header().Set("Cache-Control", "public, max-age=3600")
		srv.ServeHTTP(w, r)
	})
}
