// Package images holds the build contexts of the example images: a
// Dockerfile and the files it adds, for each image the tutorials and paddle-operator's examples name. Docker
// builds them for a real cluster; the local cluster's node runs them as they
// are (docs/local-node.md), from the copies `paddlejob up` writes, under the
// image names images.yaml gives each (see table.go).
package images

import (
	"embed"
	"io/fs"
)

// Every directory here is a build context; "*/*" rather than a list of names
// so that adding an example takes a directory and its images.yaml entry, no
// Go. (Unlike a directory pattern, it keeps a context's top-level dot files,
// such as .dockerignore.)
//
//go:embed images.yaml */*
var files embed.FS

// Contexts returns the build contexts, one directory each, and images.yaml.
func Contexts() fs.FS { return files }
