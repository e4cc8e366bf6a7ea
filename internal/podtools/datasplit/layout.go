package datasplit

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Options are the flags of `paddlejob data split`.
type Options struct {
	Sources      []Source
	OutDir       string // --out
	Job          string // --job; empty puts the parts directly in OutDir
	Parts        int    // --parts: the number of trainers
	Mode         Mode
	FileName     string // the file in each <part>/data/; DefaultFileName when empty
	Force        bool   // replace parts a previous split left
	MaxLineBytes int    // DefaultMaxLineBytes when 0
}

// Part is one written part.
type Part struct {
	Path string // <root>/<index>/data/<file>
	PartStats
}

// DefaultFileName is the name of each part's file: the input's base name
// when there is one input file, else data.txt.
func DefaultFileName(sources []Source) string {
	if len(sources) == 1 {
		return filepath.Base(sources[0].Name)
	}
	return "data.txt"
}

// writeBufferBytes is each open part's write buffer.
const writeBufferBytes = 64 << 10

// Run writes the parts: <OutDir>/<Job>/<i>/data/<FileName> for i in
// 0..Parts-1. It writes into a hidden staging directory under the root and
// moves the parts into place only when all are complete, so a failed split
// leaves no partial parts behind.
func Run(opts Options) ([]Part, error) {
	if err := opts.complete(); err != nil {
		return nil, err
	}
	root := filepath.Join(opts.OutDir, opts.Job)
	existing, err := existingParts(root)
	if err != nil {
		return nil, err
	}
	if len(existing) > 0 && !opts.Force {
		return nil, fmt.Errorf("%s already holds split data (%s); pass --force to replace it", root, strings.Join(existing, ", "))
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, fmt.Errorf("creating %s: %w", root, err)
	}
	staging, err := os.MkdirTemp(root, ".split-")
	if err != nil {
		return nil, fmt.Errorf("creating a staging directory in %s: %w", root, err)
	}
	defer os.RemoveAll(staging)

	stats, err := writeParts(opts, staging)
	if err != nil {
		return nil, err
	}
	if err := removeParts(root, existing); err != nil {
		return nil, err
	}
	parts := make([]Part, opts.Parts)
	for i := range parts {
		dir := filepath.Join(root, strconv.Itoa(i))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
		if err := os.Rename(filepath.Join(staging, strconv.Itoa(i), "data"), filepath.Join(dir, "data")); err != nil {
			return nil, fmt.Errorf("moving part %d into place: %w", i, err)
		}
		parts[i] = Part{Path: filepath.Join(dir, "data", opts.FileName), PartStats: stats[i]}
	}
	return parts, nil
}

// complete fills in defaults and validates, naming the flag at fault.
func (o *Options) complete() error {
	var problems []string
	if o.OutDir == "" {
		problems = append(problems, "--out (or OUT_DIR) is required")
	}
	if o.Parts < 1 {
		problems = append(problems, fmt.Sprintf("--parts (or SPLIT_COUNT) must be at least 1, not %d", o.Parts))
	}
	if !plainName(o.Job) && o.Job != "" {
		problems = append(problems, fmt.Sprintf("--job=%q must be a plain name", o.Job))
	}
	if len(o.Sources) == 0 {
		problems = append(problems, "--input is required")
	}
	if o.Mode == "" {
		o.Mode = RoundRobin
	}
	if _, err := ParseMode(string(o.Mode)); err != nil {
		problems = append(problems, err.Error())
	}
	if o.FileName == "" {
		o.FileName = DefaultFileName(o.Sources)
	}
	if !plainName(o.FileName) {
		problems = append(problems, fmt.Sprintf("--name=%q must be a plain file name", o.FileName))
	}
	if o.MaxLineBytes == 0 {
		o.MaxLineBytes = DefaultMaxLineBytes
	}
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "; "))
	}
	return nil
}

func plainName(s string) bool {
	return s != "" && s != "." && s != ".." && !strings.ContainsRune(s, filepath.Separator)
}

// writeParts splits into <staging>/<i>/data/<file>.
func writeParts(opts Options, staging string) (stats []PartStats, err error) {
	files := make([]*os.File, 0, opts.Parts)
	buffers := make([]*bufio.Writer, 0, opts.Parts)
	writers := make([]io.Writer, 0, opts.Parts)
	defer func() {
		for _, f := range files {
			err = errors.Join(err, f.Close())
		}
	}()
	for i := range opts.Parts {
		dir := filepath.Join(staging, strconv.Itoa(i), "data")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
		f, err := os.Create(filepath.Join(dir, opts.FileName))
		if err != nil {
			return nil, err
		}
		files = append(files, f)
		b := bufio.NewWriterSize(f, writeBufferBytes)
		buffers = append(buffers, b)
		writers = append(writers, b)
	}
	stats, err = split(opts.Sources, opts.Mode, opts.MaxLineBytes, writers)
	if err != nil {
		return nil, err
	}
	for i, b := range buffers {
		if err := b.Flush(); err != nil {
			return nil, fmt.Errorf("writing part %d: %w", i, err)
		}
	}
	return stats, nil
}

// existingParts lists the parts a previous split left in root, as
// "<i>/data", in index order.
func existingParts(root string) ([]string, error) {
	entries, err := os.ReadDir(root)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", root, err)
	}
	type part struct {
		index int
		name  string
	}
	var found []part
	for _, e := range entries {
		i, err := strconv.Atoi(e.Name())
		if err != nil || i < 0 || !e.IsDir() {
			continue
		}
		if _, err := os.Stat(filepath.Join(root, e.Name(), "data")); err == nil {
			found = append(found, part{i, e.Name()})
		}
	}
	slices.SortFunc(found, func(a, b part) int { return a.index - b.index })
	parts := make([]string, len(found))
	for j, p := range found {
		parts[j] = filepath.Join(p.name, "data")
	}
	return parts, nil
}

// removeParts deletes the listed parts, and their index directories when
// nothing else is in them.
func removeParts(root string, parts []string) error {
	for _, p := range parts {
		if err := os.RemoveAll(filepath.Join(root, p)); err != nil {
			return fmt.Errorf("removing the old part %s: %w", p, err)
		}
		_ = os.Remove(filepath.Join(root, filepath.Dir(p))) // fails, as intended, when not empty
	}
	return nil
}
