package node

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/moby/patternmatcher"
	"github.com/moby/patternmatcher/ignorefile"
)

// A build context's .dockerignore (or Dockerfile.dockerignore, which docker
// build prefers) leaves files out of what COPY and ADD take, read and
// matched by moby/patternmatcher as docker build does. A named source that
// it excludes is an error, a wildcard skips what it excludes, and a copied
// directory's excluded entries are left out of each container's copy
// (imagefiles.go asks skipper's function as it copies, so files added to
// the context later are matched too).

// contextIgnore is a context's ignore patterns, for the files under base
// (a path in the context, "." for the context itself).
type contextIgnore struct {
	file     string
	patterns []string
	base     string
}

// readContextIgnore reads the ignore file of the context at dir; nil when
// it has none.
func readContextIgnore(dir string) (*contextIgnore, error) {
	for _, name := range []string{dockerfileName + ".dockerignore", ".dockerignore"} {
		file := filepath.Join(dir, name)
		f, err := os.Open(file)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		patterns, err := ignorefile.ReadAll(f)
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		if _, err := patternmatcher.New(patterns); err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		if len(patterns) == 0 {
			return nil, nil
		}
		return &contextIgnore{file: file, patterns: patterns, base: "."}, nil
	}
	return nil, nil
}

// under is the ignore patterns for the files under rel, a directory of the
// context.
func (c *contextIgnore) under(rel string) *contextIgnore {
	if c == nil {
		return nil
	}
	return &contextIgnore{file: c.file, patterns: c.patterns, base: rel}
}

// excludes reports whether the patterns exclude rel, a path in the context.
func (c *contextIgnore) excludes(rel string) (bool, error) {
	if c == nil || rel == "." {
		return false, nil
	}
	pm, err := patternmatcher.New(c.patterns)
	if err != nil {
		return false, err
	}
	return pm.MatchesOrParentMatches(rel)
}

// skipper returns what a copy of the directory source (the file base
// leads to) leaves out: skip(p, isDir) reports whether the entry p under
// source is excluded. An excluded directory is still entered when a "!"
// pattern takes back some of its content, as docker build keeps the
// parents of what it sends. Nil without patterns.
func (c *contextIgnore) skipper(source string) func(p string, isDir bool) (bool, error) {
	if c == nil {
		return nil
	}
	pm, err := patternmatcher.New(c.patterns)
	if err != nil {
		return func(string, bool) (bool, error) { return false, err }
	}
	excludes := func(p string) (bool, error) {
		rel, err := filepath.Rel(source, p)
		if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
			return false, fmt.Errorf("%s is not under %s", p, source)
		}
		excluded, err := pm.MatchesOrParentMatches(path.Join(c.base, filepath.ToSlash(rel)))
		if err != nil {
			return false, fmt.Errorf("%s: %w", c.file, err)
		}
		return excluded, nil
	}
	return func(p string, isDir bool) (bool, error) {
		excluded, err := excludes(p)
		if err != nil || !excluded || !isDir || !pm.Exclusions() {
			return excluded, err
		}
		taken, err := anyTakenBack(p, excludes)
		return !taken, err
	}
}

// anyTakenBack reports whether some entry under the excluded directory dir
// is not excluded.
func anyTakenBack(dir string, excludes func(p string) (bool, error)) (bool, error) {
	errFound := errors.New("found")
	err := filepath.WalkDir(dir, func(p string, _ fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		excluded, err := excludes(p)
		if err == nil && !excluded {
			return errFound
		}
		return err
	})
	if errors.Is(err, errFound) {
		return true, nil
	}
	return false, err
}
