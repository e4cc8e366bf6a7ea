package node

import (
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/moby/buildkit/frontend/dockerfile/instructions"

	"github.com/paddlejob/paddlejob/internal/truncate"
)

// COPY and ADD add files of the build context to the image's files, which
// each container gets a copy of when it starts (imagefiles.go): the sources
// are read then, not now.

// copyCommand reads COPY: sources of the context only.
func (b *dockerBuild) copyCommand(c *instructions.CopyCommand, line int) error {
	switch {
	case c.From != "":
		return fmt.Errorf("COPY --from=%s: multi-stage builds are not supported for local images", c.From)
	case len(c.ExcludePatterns) > 0:
		return fmt.Errorf("COPY --exclude=%s is not supported for local images: list the files in .dockerignore", c.ExcludePatterns[0])
	case c.Parents:
		return fmt.Errorf("COPY --parents is not supported for local images")
	}
	if c.Chmod != "" {
		b.warn(line, fmt.Sprintf("COPY --chmod=%s is not applied for local images: files keep their modes", c.Chmod))
	}
	return b.copy("COPY", c.SourcesAndDest)
}

// addCommand reads ADD: as COPY, without URLs and archives to extract.
func (b *dockerBuild) addCommand(c *instructions.AddCommand, line int) error {
	switch {
	case len(c.ExcludePatterns) > 0:
		return fmt.Errorf("ADD --exclude=%s is not supported for local images: list the files in .dockerignore", c.ExcludePatterns[0])
	case c.Checksum != "", c.KeepGitDir != nil:
		return fmt.Errorf("ADD --checksum and --keep-git-dir are for URLs, which are not supported for local images")
	case c.Unpack != nil:
		return fmt.Errorf("ADD --unpack is not supported for local images")
	}
	for _, src := range c.SourcePaths {
		if strings.Contains(src, "://") || strings.HasPrefix(src, "git@") {
			return fmt.Errorf("ADD %s: URLs are not supported for local images: download the file into the context", src)
		}
	}
	if c.Chmod != "" {
		b.warn(line, fmt.Sprintf("ADD --chmod=%s is not applied for local images: files keep their modes", c.Chmod))
	}
	return b.copy("ADD", c.SourcesAndDest)
}

// copySource is a source of a COPY: its name in the context and the file
// it leads to.
type copySource struct{ name, real string }

// copy adds the sources to the image's files at the destination.
func (b *dockerBuild) copy(cmd string, sd instructions.SourcesAndDest) error {
	if len(sd.SourceContents) > 0 {
		return fmt.Errorf("%s with a here-document is not supported for local images: put the file in the context", cmd)
	}
	dst := sd.DestPath
	dstIsDir := strings.HasSuffix(dst, "/") || strings.HasSuffix(dst, "/.") || dst == "." || dst == ".."
	if !path.IsAbs(dst) {
		dst = path.Join(b.workdir(), dst)
	}
	dst = path.Clean(dst)
	if err := checkImagePath(dst); err != nil {
		return fmt.Errorf("%s: %w", cmd, err)
	}
	var sources []copySource
	for _, src := range sd.SourcePaths {
		found, err := b.sources(cmd, src)
		if err != nil {
			return err
		}
		sources = append(sources, found...)
	}
	if len(sources) > 1 && !dstIsDir {
		return fmt.Errorf("%s: with more than one source the destination must be a directory and end with /", cmd)
	}
	for _, s := range sources {
		st, err := os.Stat(s.real)
		if err != nil {
			return err
		}
		switch {
		case st.IsDir():
			// A directory's content goes into the destination, less what
			// .dockerignore excludes.
			b.entry.Files = append(b.entry.Files, ImageFile{Source: s.real, Path: dst, Ignore: b.ignore.under(b.rel(s.name))})
		case st.Mode().IsRegular():
			if cmd == "ADD" && isArchive(s.real) {
				return fmt.Errorf("ADD %s: extracting archives is not supported for local images: extract it into the context and COPY the result", s.name)
			}
			to := dst
			if dstIsDir || b.isDir(dst) {
				to = path.Join(dst, filepath.Base(s.name))
			}
			b.entry.Files = append(b.entry.Files, ImageFile{Source: s.real, Path: to})
		default:
			return fmt.Errorf("%s %s: %s", cmd, s.name, unsupportedFileMessage(st.Mode()))
		}
	}
	return nil
}

// sources finds what src names in the context: itself, or what its
// wildcards match, less what .dockerignore excludes.
func (b *dockerBuild) sources(cmd, src string) ([]copySource, error) {
	rel := path.Clean(strings.TrimPrefix(filepath.ToSlash(src), "/"))
	if rel == ".." || strings.HasPrefix(rel, "../") {
		return nil, fmt.Errorf("%s %s: the source is outside the build context", cmd, src)
	}
	matches := []string{filepath.Join(b.context, rel)}
	glob := strings.ContainsAny(rel, "*?[")
	if glob {
		var err error
		if matches, err = filepath.Glob(matches[0]); err != nil {
			return nil, fmt.Errorf("%s %s: %w", cmd, src, err)
		}
	}
	var out []copySource
	for _, m := range matches {
		ignored, err := b.ignore.excludes(b.rel(m))
		if err != nil {
			return nil, err
		}
		if ignored && !glob {
			return nil, fmt.Errorf("%s %s: excluded from the build context by .dockerignore", cmd, src)
		}
		if ignored {
			continue
		}
		real, err := filepath.EvalSymlinks(m)
		if err != nil {
			return nil, fmt.Errorf("%s %s: not found in the build context %s", cmd, src, b.context)
		}
		if !isUnder(real, b.context) {
			return nil, fmt.Errorf("%s %s: the source leads outside the build context (to %s)", cmd, src, real)
		}
		out = append(out, copySource{name: m, real: real})
	}
	if glob && len(out) == 0 {
		return nil, fmt.Errorf("%s %s: no file of the build context matches", cmd, src)
	}
	return out, nil
}

// rel is the path of name (a path under the context) in the context, as
// .dockerignore patterns name it: "." for the context itself.
func (b *dockerBuild) rel(name string) string {
	r, err := filepath.Rel(b.context, name)
	if err != nil {
		return name
	}
	return filepath.ToSlash(r)
}

// isDir reports whether the image has a directory at p: one its files put
// there, a WORKDIR, or, the host standing in for the base, a host directory.
func (b *dockerBuild) isDir(p string) bool {
	for i := len(b.entry.Files) - 1; i >= 0; i-- {
		f := b.entry.Files[i]
		st, err := os.Stat(f.Source)
		switch {
		case err != nil:
		case f.Path == p:
			return st.IsDir()
		case st.IsDir() && isUnder(p, f.Path):
			if st, err := os.Stat(filepath.Join(f.Source, strings.TrimPrefix(p, f.Path))); err == nil {
				return st.IsDir()
			}
		}
	}
	if b.dirs[p] {
		return true
	}
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}

// isArchive reports whether ADD would extract the file: a tar archive,
// compressed or not.
func isArchive(file string) bool {
	f, err := os.Open(file)
	if err != nil {
		return false
	}
	defer f.Close()
	head := make([]byte, 512)
	n, _ := io.ReadFull(f, head)
	head = head[:n]
	for _, magic := range [][]byte{{0x1f, 0x8b}, []byte("BZh"), {0xfd, '7', 'z', 'X', 'Z', 0}, {0x28, 0xb5, 0x2f, 0xfd}} {
		if bytes.HasPrefix(head, magic) {
			return true
		}
	}
	return len(head) >= 262 && string(head[257:262]) == "ustar"
}

// shorten puts s on one line, cut to n bytes.
func shorten(s string, n int) string {
	return truncate.String(strings.Join(strings.Fields(s), " "), n)
}

// unsupportedFileMessage says why a file cannot be in a local image.
func unsupportedFileMessage(mode fs.FileMode) string {
	kind := "special file"
	switch {
	case mode&fs.ModeSocket != 0:
		kind = "socket"
	case mode&fs.ModeNamedPipe != 0:
		kind = "named pipe"
	case mode&fs.ModeCharDevice != 0:
		kind = "character device"
	case mode&fs.ModeDevice != 0:
		kind = "device"
	}
	return "is a " + kind + ": a local image holds only regular files, directories and symlinks"
}
