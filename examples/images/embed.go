// Package images holds the build contexts of the example images: a
// Dockerfile and the files it adds, for each image the tutorials and paddle-operator's examples name. Docker
// builds them for a real cluster; the local cluster's node runs them as they
// are (docs/local-node.md), from the copies `paddlejob up` writes.
package images

import (
	"embed"
	"io/fs"
)

//go:embed demo-wide-and-deep demo-resnet seed000-quickstart seed001-mypaddle seed002-word2vec
var contexts embed.FS

// Contexts returns the build contexts, one directory each.
func Contexts() fs.FS { return contexts }
