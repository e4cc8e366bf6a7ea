// Package python embeds the Python SDK's package, so that the local cluster
// can put it into the example images that import it
// (examples/images/seed002-word2vec).
package python

import (
	"embed"
	"io/fs"
)

//go:embed src/paddlejob/*.py src/paddlejob/py.typed
var sources embed.FS

// SDK returns the paddlejob package's files, at the root.
func SDK() fs.FS {
	sub, err := fs.Sub(sources, "src/paddlejob")
	if err != nil {
		panic(err) // the directory is embedded above
	}
	return sub
}
