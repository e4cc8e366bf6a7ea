// Package version holds the build's version, stamped with -ldflags
// "-X github.com/paddlejob/paddlejob/internal/version.Version=v1.2.3".
package version
