// Package fsutil holds the file-system helpers more than one package needs.
package fsutil
