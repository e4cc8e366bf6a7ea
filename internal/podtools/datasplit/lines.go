package datasplit

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// DefaultMaxLineBytes is the longest line accepted unless told otherwise.
const DefaultMaxLineBytes = 16 << 20

// initialLineBuffer is the line buffer's starting size; it grows up to the
// longest line seen, at most the limit.
const initialLineBuffer = 64 << 10

// Source is one input. Open is called once per pass: contiguous splitting
// reads every input twice, counting first.
type Source struct {
	Name string
	Open func() (io.ReadCloser, error)
}

// FileSources turns --input paths into sources: a file as itself, a
// directory as every regular file beneath it in lexical path order, except
// under skipDir (the output, so that splitting a directory again does not
// read the parts of the last run).
func FileSources(paths []string, skipDir string) ([]Source, error) {
	if len(paths) == 0 {
		return nil, errors.New("--input is required")
	}
	var sources []Source
	add := func(path string) {
		sources = append(sources, Source{Name: path, Open: func() (io.ReadCloser, error) { return os.Open(path) }})
	}
	for _, p := range paths {
		info, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("--input %s: %w", p, err)
		}
		if !info.IsDir() {
			add(p)
			continue
		}
		err = filepath.WalkDir(p, func(path string, d os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && skipDir != "" && sameFile(path, skipDir) {
				return filepath.SkipDir
			}
			if d.Type().IsRegular() {
				add(path)
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("--input %s: %w", p, err)
		}
	}
	if len(sources) == 0 {
		return nil, fmt.Errorf("--input %s: no files", strings.Join(paths, ", "))
	}
	return sources, nil
}

// eachLine calls fn with every line of every source in order, each with its
// newline if it had one. The slice is only valid during the call.
func eachLine(sources []Source, maxLine int, fn func(line []byte) error) error {
	for _, src := range sources {
		if err := eachLineOf(src, maxLine, fn); err != nil {
			return err
		}
	}
	return nil
}

func eachLineOf(src Source, maxLine int, fn func(line []byte) error) (err error) {
	r, err := src.Open()
	if err != nil {
		return fmt.Errorf("opening %s: %w", src.Name, err)
	}
	defer func() { err = errors.Join(err, r.Close()) }()
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, min(initialLineBuffer, maxLine)), maxLine)
	sc.Split(scanLinesKeepingNewline)
	var n int64
	for sc.Scan() {
		n++
		if err := fn(sc.Bytes()); err != nil {
			return err
		}
	}
	if errors.Is(sc.Err(), bufio.ErrTooLong) {
		return fmt.Errorf("%s: line %d is longer than %d bytes, the longest line accepted", src.Name, n+1, maxLine)
	}
	if sc.Err() != nil {
		return fmt.Errorf("reading %s: %w", src.Name, sc.Err())
	}
	return nil
}

// scanLinesKeepingNewline is bufio.ScanLines without dropping the newline or
// a carriage return, so lines are copied byte for byte.
func scanLinesKeepingNewline(data []byte, atEOF bool) (advance int, token []byte, err error) {
	if i := bytes.IndexByte(data, '\n'); i >= 0 {
		return i + 1, data[:i+1], nil
	}
	if atEOF && len(data) > 0 {
		return len(data), data, nil
	}
	return 0, nil, nil
}

func sameFile(a, b string) bool {
	ia, errA := os.Stat(a)
	ib, errB := os.Stat(b)
	return errA == nil && errB == nil && os.SameFile(ia, ib)
}
