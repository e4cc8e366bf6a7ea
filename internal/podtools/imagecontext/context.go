package imagecontext

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/paddlejob/paddlejob/internal/fsutil"
)

// Options are the flags of `paddlejob image context`.
type Options struct {
	Src        string // --src: the trainer package on this host
	Dest       string // --dest: its absolute path in the image
	Base       string // --base: the PaddlePaddle image to build on
	Image      string // --image: the runtime image to build, NAME[:tag]
	Entrypoint string // --entrypoint: optional command line
	Out        string // --out: the context directory
}

// Write validates the options and writes the build context into Out: a
// Dockerfile and a copy of Src under package/. Out must be missing, empty,
// or a context this command wrote before (which is replaced).
func Write(opts Options) error {
	if err := opts.validate(); err != nil {
		return err
	}
	df, err := dockerfile(opts.Base, opts.Image, opts.Dest, opts.Entrypoint)
	if err != nil {
		return err
	}
	if err := prepareOut(opts.Out); err != nil {
		return err
	}
	if err := fsutil.CopyTree(opts.Src, filepath.Join(opts.Out, packageDir)); err != nil {
		return fmt.Errorf("copying --src %s into the context: %w", opts.Src, err)
	}
	if err := os.WriteFile(filepath.Join(opts.Out, "Dockerfile"), []byte(df), 0o644); err != nil {
		return fmt.Errorf("writing the Dockerfile: %w", err)
	}
	return nil
}

func (o Options) validate() error {
	var problems []string
	add := func(err error) {
		if err != nil {
			problems = append(problems, err.Error())
		}
	}
	add(validateSrc(o.Src))
	add(validateDest(o.Dest))
	add(validateReference("base", o.Base, true))
	add(validateReference("image", o.Image, false))
	add(validateOut(o.Out, o.Src))
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "; "))
	}
	return nil
}

func validateSrc(src string) error {
	if src == "" {
		return errors.New("--src is required")
	}
	info, err := os.Stat(src)
	if err != nil {
		return fmt.Errorf("--src: %w", err)
	}
	if !info.IsDir() {
		return fmt.Errorf("--src=%s is not a directory", src)
	}
	return nil
}

func validateDest(dest string) error {
	switch {
	case dest == "":
		return errors.New("--dest is required")
	case !path.IsAbs(dest):
		return fmt.Errorf("--dest=%q must be an absolute path in the image", dest)
	case strings.ContainsAny(dest, " \t\r\n\"'\\$"):
		return fmt.Errorf("--dest=%q must not contain blanks, quotes, backslashes or $", dest)
	}
	return nil
}

// validateOut keeps the context out of the package it copies.
func validateOut(out, src string) error {
	if out == "" {
		return errors.New("--out is required")
	}
	absOut, errOut := filepath.Abs(out)
	absSrc, errSrc := filepath.Abs(src)
	if errOut != nil || errSrc != nil || src == "" {
		return nil // reported for --src, or by prepareOut
	}
	if rel, err := filepath.Rel(absSrc, absOut); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return fmt.Errorf("--out=%s lies inside --src=%s; the context would copy itself", out, src)
	}
	return nil
}

// prepareOut makes out an empty directory, refusing to empty anything but a
// context written by this command.
func prepareOut(out string) error {
	entries, err := os.ReadDir(out)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return os.MkdirAll(out, 0o755)
	case err != nil:
		return fmt.Errorf("--out: %w", err)
	case len(entries) == 0:
		return nil
	}
	if !writtenByUs(filepath.Join(out, "Dockerfile")) {
		return fmt.Errorf("--out=%s is not empty and holds no context written by paddlejob; choose another directory", out)
	}
	for _, e := range entries {
		if err := os.RemoveAll(filepath.Join(out, e.Name())); err != nil {
			return fmt.Errorf("replacing the context in %s: %w", out, err)
		}
	}
	return nil
}

// writtenByUs reports whether a Dockerfile starts with our marker.
func writtenByUs(dockerfilePath string) bool {
	f, err := os.Open(dockerfilePath)
	if err != nil {
		return false
	}
	defer f.Close()
	first, err := bufio.NewReader(f).ReadString('\n')
	return (err == nil || err == io.EOF) && strings.TrimSuffix(first, "\n") == dockerfileMarker
}
