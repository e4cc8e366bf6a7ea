package dashboard

import (
	"embed"
	"io/fs"
	"net/http"
	"strings"
)

// The page is built from web/ (Preact and uPlot, TypeScript, by Vite) into
// web/dist, which is committed: `go build`, `go install` and `go vet` work
// on a clean clone without Node.js, and `make verify-web` checks in CI that
// web/dist is what web/'s sources build.
//
//go:embed all:web/dist
var dist embed.FS

func assetHandler() http.Handler {
	sub, err := fs.Sub(dist, "web/dist")
	if err != nil {
		panic(err)
	}
	files := http.FileServerFS(sub)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		// Assets are named by their content: cache them for good. The page
		// itself is asked for each time, so a new binary's page is seen.
		if strings.HasPrefix(r.URL.Path, "/assets/") {
			w.Header().Set("Cache-Control", "public, max-age=31536000, immutable")
		} else {
			w.Header().Set("Cache-Control", "no-cache")
		}
		files.ServeHTTP(w, r)
	})
}
