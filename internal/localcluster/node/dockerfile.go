package node

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/paddlejob/paddlejob/internal/truncate"
)

// A local image can be built from a Docker build context: the node reads its
// Dockerfile into an ImageEntry when the image table is loaded, interpreting
// the instructions that describe the image (FROM, COPY, ADD, WORKDIR, ENV,
// ENTRYPOINT, CMD, SHELL, ARG), ignoring those that do not matter here
// (LABEL, EXPOSE, USER, VOLUME, HEALTHCHECK, STOPSIGNAL, MAINTAINER, ONBUILD)
// and warning about RUN, which cannot run: whatever a RUN would install must
// already be on this machine (a language runtime among the base entry's
// hostPaths, say). Multi-stage builds are refused.

// dockerfileName is the Dockerfile of a context.
const dockerfileName = "Dockerfile"

// dockerShell is the shell of the shell forms, until a SHELL instruction.
var dockerShell = []string{"/bin/sh", "-c"}

// dockerInstruction is one instruction of a Dockerfile, its continuation
// lines joined.
type dockerInstruction struct {
	line int    // where it starts, from 1
	cmd  string // upper case
	args string // the rest, leading blanks removed
}

// heredocMarker finds the here-documents a RUN may carry (<<EOF, <<-"EOF").
var heredocMarker = regexp.MustCompile(`(?:^|\s)<<(-?)(["']?)([A-Za-z0-9_]+)(["']?)`)

// parseDockerfile splits a Dockerfile into instructions: comments and blank
// lines dropped, lines ending in a backslash joined with the next (comment
// lines among them dropped too), here-documents of RUN skipped. file names
// the Dockerfile in errors.
func parseDockerfile(file string, data []byte) ([]dockerInstruction, error) {
	lines := strings.Split(strings.ReplaceAll(string(data), "\r\n", "\n"), "\n")
	var out []dockerInstruction
	directives := true
	for i := 0; i < len(lines); {
		trimmed := strings.TrimSpace(lines[i])
		if trimmed == "" || strings.HasPrefix(trimmed, "#") {
			if directives && strings.HasPrefix(trimmed, "#") {
				if err := parserDirective(file, i+1, trimmed); err != nil {
					return nil, err
				}
			} else {
				directives = false
			}
			i++
			continue
		}
		directives = false
		start := i + 1
		var b strings.Builder
		for i < len(lines) {
			l := lines[i]
			i++
			body, continued := strings.CutSuffix(strings.TrimRight(l, " \t"), `\`)
			if !continued {
				b.WriteString(l)
				break
			}
			b.WriteString(body)
			// Comment lines inside a continuation are dropped, as are blank ones.
			for i < len(lines) {
				next := strings.TrimSpace(lines[i])
				if next != "" && !strings.HasPrefix(next, "#") {
					break
				}
				i++
			}
		}
		text := strings.TrimSpace(b.String())
		cmd, args := text, ""
		if j := strings.IndexAny(text, " \t"); j >= 0 {
			cmd, args = text[:j], text[j+1:]
		}
		in := dockerInstruction{line: start, cmd: strings.ToUpper(cmd), args: strings.TrimSpace(args)}
		if in.cmd == "RUN" {
			// The bodies of its here-documents follow the line.
			for _, m := range heredocMarker.FindAllStringSubmatch(in.args, -1) {
				end, found := m[3], false
				for i < len(lines) {
					l := lines[i]
					i++
					if m[1] == "-" {
						l = strings.TrimLeft(l, "\t")
					}
					if l == end {
						found = true
						break
					}
				}
				if !found {
					return nil, fmt.Errorf("%s:%d: RUN: here-document %s is not terminated", file, start, end)
				}
			}
		} else if (in.cmd == "COPY" || in.cmd == "ADD") && heredocMarker.MatchString(in.args) {
			return nil, fmt.Errorf("%s:%d: %s with a here-document is not supported for local images: put the file in the context", file, start, in.cmd)
		}
		out = append(out, in)
	}
	return out, nil
}

// parserDirective checks a "# directive=value" line at the top of a
// Dockerfile: only the default escape character is supported.
func parserDirective(file string, line int, text string) error {
	name, value, ok := strings.Cut(strings.TrimSpace(strings.TrimPrefix(text, "#")), "=")
	if ok && strings.EqualFold(strings.TrimSpace(name), "escape") && strings.TrimSpace(value) != `\` {
		return fmt.Errorf("%s:%d: escape=%s: only the default escape character \\ is supported for local images", file, line, strings.TrimSpace(value))
	}
	return nil
}

// dockerBuild interprets a Dockerfile's instructions into an image entry.
type dockerBuild struct {
	file    string // the Dockerfile, for messages
	context string // the context, symlinks resolved
	// base finds the FROM image's entry in the table: false when the table
	// has none (the host's directories then stand in for it).
	base func(ref string) (ImageEntry, bool, error)

	entry ImageEntry
	// globalArgs are ARGs before FROM, args those after it.
	globalArgs, args map[string]string
	shell            []string
	cmdSet, fromSeen bool
	// dirs are directories the image has so far: its WORKDIRs.
	dirs     map[string]bool
	warnings []string
}

// buildContext reads the Dockerfile of context into an entry.
func buildContext(context string, base func(ref string) (ImageEntry, bool, error)) (ImageEntry, []string, error) {
	if !filepath.IsAbs(context) {
		return ImageEntry{}, nil, fmt.Errorf("context %q must be an absolute path", context)
	}
	file := filepath.Join(context, dockerfileName)
	data, err := os.ReadFile(file)
	if err != nil {
		return ImageEntry{}, nil, fmt.Errorf("context %s: %w", context, err)
	}
	real, err := filepath.EvalSymlinks(context)
	if err != nil {
		return ImageEntry{}, nil, err
	}
	instructions, err := parseDockerfile(file, data)
	if err != nil {
		return ImageEntry{}, nil, err
	}
	b := &dockerBuild{file: file, context: real, base: base, globalArgs: map[string]string{}, args: map[string]string{},
		shell: dockerShell, dirs: map[string]bool{}}
	if _, err := os.Stat(filepath.Join(context, ".dockerignore")); err == nil {
		b.warn(0, ".dockerignore is not applied for local images: COPY and ADD take every file they name")
	}
	for _, in := range instructions {
		if err := b.apply(in); err != nil {
			return ImageEntry{}, nil, fmt.Errorf("%s:%d: %w", file, in.line, err)
		}
	}
	if !b.fromSeen {
		return ImageEntry{}, nil, fmt.Errorf("%s: no FROM instruction", file)
	}
	return b.entry, b.warnings, nil
}

func (b *dockerBuild) warn(line int, msg string) {
	where := b.file
	if line > 0 {
		where = fmt.Sprintf("%s:%d", b.file, line)
	}
	b.warnings = append(b.warnings, msg+" ("+where+")")
}

func (b *dockerBuild) apply(in dockerInstruction) error {
	if !b.fromSeen && in.cmd != "FROM" && in.cmd != "ARG" {
		return fmt.Errorf("%s before FROM", in.cmd)
	}
	switch in.cmd {
	case "FROM":
		return b.from(in.args)
	case "ARG":
		return b.arg(in.args)
	case "ENV":
		return b.env(in.args)
	case "WORKDIR":
		words, err := b.words(in.args, false)
		if err != nil {
			return err
		}
		if len(words) != 1 || words[0] == "" {
			return errors.New("WORKDIR needs one directory")
		}
		dir := words[0]
		if !path.IsAbs(dir) {
			dir = path.Join(b.workdir(), dir)
		}
		dir = path.Clean(dir)
		if err := checkImagePath(dir); err != nil {
			return fmt.Errorf("WORKDIR: %w", err)
		}
		b.entry.WorkingDir = dir
		for d := dir; d != "/"; d = path.Dir(d) {
			b.dirs[d] = true
		}
		return nil
	case "COPY", "ADD":
		return b.copy(in)
	case "ENTRYPOINT":
		b.entry.Command = b.commandLine(in.args)
		if !b.cmdSet {
			// Docker: an ENTRYPOINT resets the CMD of the base image.
			b.entry.Args = nil
		}
		return nil
	case "CMD":
		b.entry.Args = b.commandLine(in.args)
		b.cmdSet = true
		return nil
	case "SHELL":
		var shell []string
		if err := json.Unmarshal([]byte(in.args), &shell); err != nil || len(shell) == 0 {
			return errors.New(`SHELL needs a JSON array, e.g. SHELL ["/bin/bash", "-c"]`)
		}
		b.shell = shell
		return nil
	case "RUN":
		if v := paddleReleasePinnedBy(in.args); v != "" {
			// The image holds Paddle v: it runs on the node's runtime for it.
			b.entry.PaddleRelease = v
			return nil
		}
		b.warn(in.line, fmt.Sprintf("RUN %s is not run for local images: what it would install must already be on this machine", shorten(in.args, 80)))
		return nil
	case "ONBUILD":
		b.warn(in.line, "ONBUILD is ignored for local images: images built FROM this one do not run it")
		return nil
	case "LABEL", "EXPOSE", "USER", "VOLUME", "HEALTHCHECK", "STOPSIGNAL", "MAINTAINER":
		return nil
	}
	return fmt.Errorf("unknown instruction %s", in.cmd)
}

func (b *dockerBuild) from(text string) error {
	if b.fromSeen {
		return errors.New("a second FROM: multi-stage builds are not supported for local images")
	}
	words, err := b.words(text, true)
	if err != nil {
		return err
	}
	for len(words) > 0 && strings.HasPrefix(words[0], "--") {
		if !strings.HasPrefix(words[0], "--platform=") {
			return fmt.Errorf("FROM: unknown flag %s", words[0])
		}
		words = words[1:]
	}
	if len(words) != 1 && (len(words) != 3 || !strings.EqualFold(words[1], "AS")) {
		return errors.New("FROM needs an image, optionally followed by AS name")
	}
	b.fromSeen = true
	base, known, err := b.base(words[0])
	if err != nil {
		return fmt.Errorf("FROM %s: %w", words[0], err)
	}
	if known {
		b.entry = ImageEntry{
			Command:    slices.Clone(base.Command),
			Args:       slices.Clone(base.Args),
			Env:        maps.Clone(base.Env),
			WorkingDir: base.WorkingDir,
			Files:      slices.Clone(base.Files),
			HostPaths:  slices.Clone(base.HostPaths),
			Paddle:     base.Paddle,
		}
	}
	if b.entry.Env == nil {
		b.entry.Env = map[string]string{}
	}
	return nil
}

func (b *dockerBuild) arg(text string) error {
	words, err := b.words(text, true)
	if err != nil {
		return err
	}
	if len(words) == 0 {
		return errors.New("ARG needs a name")
	}
	for _, w := range words {
		name, value, hasValue := strings.Cut(w, "=")
		switch {
		case !b.fromSeen && hasValue:
			b.globalArgs[name] = value
		case !b.fromSeen:
		case hasValue:
			b.args[name] = value
		default:
			// ARG NAME after FROM brings in the global default.
			if v, ok := b.globalArgs[name]; ok {
				b.args[name] = v
			}
		}
	}
	return nil
}

func (b *dockerBuild) env(text string) error {
	words, err := b.words(text, true)
	if err != nil {
		return err
	}
	if len(words) == 0 {
		return errors.New("ENV needs a name and a value")
	}
	if !strings.Contains(words[0], "=") {
		// ENV NAME value with spaces: the rest of the line is the value.
		name := words[0]
		raw, rest := strings.TrimSpace(text), ""
		if i := strings.IndexAny(raw, " \t"); i >= 0 {
			rest = strings.TrimSpace(raw[i:])
		}
		if rest == "" {
			return fmt.Errorf("ENV %s needs a value", name)
		}
		value, err := b.words(rest, false)
		if err != nil {
			return err
		}
		b.entry.Env[name] = strings.Join(value, "")
		return nil
	}
	// ENV A=1 B=2: each takes effect after the whole line is expanded.
	set := map[string]string{}
	for _, w := range words {
		name, value, ok := strings.Cut(w, "=")
		if !ok || name == "" {
			return fmt.Errorf("ENV %q: want NAME=VALUE", w)
		}
		set[name] = value
	}
	maps.Copy(b.entry.Env, set)
	return nil
}

// commandLine reads ENTRYPOINT or CMD: the exec form (a JSON array) as it
// is, the shell form run by the shell.
func (b *dockerBuild) commandLine(text string) []string {
	if strings.HasPrefix(text, "[") {
		var argv []string
		if err := json.Unmarshal([]byte(text), &argv); err == nil {
			return argv
		}
	}
	if text == "" {
		return nil
	}
	return append(slices.Clone(b.shell), text)
}

// copy reads COPY and ADD: local sources of the context only.
func (b *dockerBuild) copy(in dockerInstruction) error {
	cmd := in.cmd
	rest := strings.TrimSpace(in.args)
	for strings.HasPrefix(rest, "--") {
		flag, after, _ := strings.Cut(rest, " ")
		rest = strings.TrimSpace(after)
		name, _, _ := strings.Cut(flag, "=")
		switch name {
		case "--chown", "--link":
		case "--chmod":
			b.warn(in.line, fmt.Sprintf("%s %s is not applied for local images: files keep their modes", cmd, flag))
		case "--from":
			return fmt.Errorf("%s %s: multi-stage builds are not supported for local images", cmd, flag)
		default:
			return fmt.Errorf("%s %s is not supported for local images", cmd, flag)
		}
	}
	var words []string
	var jsonWords []string
	if strings.HasPrefix(rest, "[") && json.Unmarshal([]byte(rest), &jsonWords) == nil {
		for _, w := range jsonWords {
			expanded, err := b.words(w, false)
			if err != nil {
				return err
			}
			words = append(words, strings.Join(expanded, ""))
		}
	} else {
		var err error
		if words, err = b.words(rest, true); err != nil {
			return err
		}
	}
	if len(words) < 2 {
		return fmt.Errorf("%s needs a source and a destination", cmd)
	}
	srcs, dst := words[:len(words)-1], words[len(words)-1]
	dstIsDir := strings.HasSuffix(dst, "/") || strings.HasSuffix(dst, "/.") || dst == "." || dst == ".."
	if !path.IsAbs(dst) {
		dst = path.Join(b.workdir(), dst)
	}
	dst = path.Clean(dst)
	if err := checkImagePath(dst); err != nil {
		return fmt.Errorf("%s: %w", cmd, err)
	}

	type source struct{ name, real string }
	var sources []source
	for _, src := range srcs {
		if cmd == "ADD" && (strings.Contains(src, "://") || strings.HasPrefix(src, "git@")) {
			return fmt.Errorf("ADD %s: URLs are not supported for local images: download the file into the context", src)
		}
		rel := path.Clean(strings.TrimPrefix(filepath.ToSlash(src), "/"))
		if rel == ".." || strings.HasPrefix(rel, "../") {
			return fmt.Errorf("%s %s: the source is outside the build context", cmd, src)
		}
		matches := []string{filepath.Join(b.context, rel)}
		if strings.ContainsAny(rel, "*?[") {
			var err error
			if matches, err = filepath.Glob(matches[0]); err != nil {
				return fmt.Errorf("%s %s: %w", cmd, src, err)
			}
			if len(matches) == 0 {
				return fmt.Errorf("%s %s: no file of the build context matches", cmd, src)
			}
		}
		for _, m := range matches {
			real, err := filepath.EvalSymlinks(m)
			if err != nil {
				return fmt.Errorf("%s %s: not found in the build context %s", cmd, src, b.context)
			}
			if !isUnder(real, b.context) {
				return fmt.Errorf("%s %s: the source leads outside the build context (to %s)", cmd, src, real)
			}
			sources = append(sources, source{name: m, real: real})
		}
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
			// A directory's content goes into the destination.
			b.entry.Files = append(b.entry.Files, ImageFile{Source: s.real, Path: dst})
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

func (b *dockerBuild) workdir() string {
	if b.entry.WorkingDir == "" {
		return "/"
	}
	return b.entry.WorkingDir
}

// words expands and splits text as Docker does (see dockerWords), with the
// image's ENV over the ARGs for variables.
func (b *dockerBuild) words(text string, split bool) ([]string, error) {
	return dockerWords(text, b.lookup, split)
}

func (b *dockerBuild) lookup(name string) (string, bool) {
	if v, ok := b.entry.Env[name]; ok {
		return v, true
	}
	args := b.args
	if !b.fromSeen {
		args = b.globalArgs
	}
	if v, ok := args[name]; ok {
		return v, true
	}
	if name == "PATH" && b.fromSeen {
		// The base sets no PATH: the container would have the node's.
		if p := os.Getenv("PATH"); p != "" {
			return p, true
		}
		return standardPath, true
	}
	return "", false
}

// dockerWords processes text as a Dockerfile does the arguments of ENV,
// COPY, WORKDIR and the like: single quotes keep everything, double quotes
// keep blanks and let \\ escape ", $ and \\, a backslash outside quotes
// escapes any character, and $NAME, ${NAME}, ${NAME:-word} and ${NAME:+word}
// expand (unset variables to nothing). With split, unquoted blanks separate
// words; without, the text is one word.
func dockerWords(text string, lookup func(string) (string, bool), split bool) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord := false
	rs := []rune(text)
	for i := 0; i < len(rs); i++ {
		c := rs[i]
		switch {
		case split && (c == ' ' || c == '\t' || c == '\n'):
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		case c == '\'':
			end := indexRune(rs, i+1, '\'')
			if end < 0 {
				return nil, fmt.Errorf("unterminated single quote in %q", text)
			}
			cur.WriteString(string(rs[i+1 : end]))
			i, inWord = end, true
		case c == '"':
			inWord = true
			j := i + 1
			for ; j < len(rs) && rs[j] != '"'; j++ {
				switch {
				case rs[j] == '\\' && j+1 < len(rs) && strings.ContainsRune(`"$\`, rs[j+1]):
					j++
					cur.WriteRune(rs[j])
				case rs[j] == '$':
					n, err := expandDollar(rs, j, lookup, &cur)
					if err != nil {
						return nil, err
					}
					j += n - 1
				default:
					cur.WriteRune(rs[j])
				}
			}
			if j >= len(rs) {
				return nil, fmt.Errorf("unterminated double quote in %q", text)
			}
			i = j
		case c == '\\':
			inWord = true
			if i+1 < len(rs) {
				i++
				cur.WriteRune(rs[i])
			}
		case c == '$':
			inWord = true
			n, err := expandDollar(rs, i, lookup, &cur)
			if err != nil {
				return nil, err
			}
			i += n - 1
		default:
			inWord = true
			cur.WriteRune(c)
		}
	}
	if inWord || (!split && len(words) == 0) {
		words = append(words, cur.String())
	}
	return words, nil
}

// expandDollar expands the variable reference at rs[i] ('$') into out and
// returns how many runes it took.
func expandDollar(rs []rune, i int, lookup func(string) (string, bool), out *strings.Builder) (int, error) {
	isName := func(r rune, first bool) bool {
		return r == '_' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (!first && r >= '0' && r <= '9')
	}
	if i+1 < len(rs) && rs[i+1] == '{' {
		end := indexRune(rs, i+2, '}')
		if end < 0 {
			return 0, fmt.Errorf("missing } in %q", string(rs[i:]))
		}
		ref := string(rs[i+2 : end])
		name, op, word := ref, "", ""
		for j, r := range ref {
			if !isName(r, j == 0) {
				name, op = ref[:j], ref[j:]
				break
			}
		}
		value, set := lookup(name)
		switch {
		case op == "":
		case strings.HasPrefix(op, ":-"):
			if word = op[2:]; value == "" {
				value = word
			}
		case strings.HasPrefix(op, "-"):
			if word = op[1:]; !set {
				value = word
			}
		case strings.HasPrefix(op, ":+"):
			if value != "" {
				value = op[2:]
			}
		case strings.HasPrefix(op, "+"):
			if set {
				value = op[1:]
			}
		case strings.HasPrefix(op, ":?"), strings.HasPrefix(op, "?"):
			if value == "" {
				return 0, fmt.Errorf("%s: %s", name, strings.TrimLeft(op, ":?"))
			}
		default:
			return 0, fmt.Errorf("unsupported variable reference ${%s}", ref)
		}
		out.WriteString(value)
		return end - i + 1, nil
	}
	j := i + 1
	for j < len(rs) && isName(rs[j], j == i+1) {
		j++
	}
	if j == i+1 {
		out.WriteRune('$')
		return 1, nil
	}
	value, _ := lookup(string(rs[i+1 : j]))
	out.WriteString(value)
	return j - i, nil
}

func indexRune(rs []rune, from int, r rune) int {
	for j := from; j < len(rs); j++ {
		if rs[j] == r {
			return j
		}
	}
	return -1
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

// resolveContexts builds the entries that have a context, each over the
// entry of its FROM image (built first when it has a context of its own),
// with the entry's own fields applied over the Dockerfile's.
func (t *ImageTable) resolveContexts() error {
	const (
		building = 1
		built    = 2
	)
	state := map[string]int{}
	var errs []error
	var resolve func(key string) error
	resolve = func(key string) error {
		switch state[key] {
		case built:
			return nil
		case building:
			return fmt.Errorf("image %q: its FROM images lead back to it", key)
		}
		e := t.entries[key]
		if e.Context == "" {
			state[key] = built
			return nil
		}
		state[key] = building
		defer func() { state[key] = built }()
		base := func(ref string) (ImageEntry, bool, error) {
			baseKey, ok := t.lookupKey(ref)
			if !ok {
				return ImageEntry{}, false, nil
			}
			if baseKey == key {
				return ImageEntry{}, false, fmt.Errorf("the image table's entry for it is %q, this image's own", key)
			}
			if err := resolve(baseKey); err != nil {
				return ImageEntry{}, false, err
			}
			return t.resolvePaddle(ref, t.entries[baseKey]), true, nil
		}
		fromContext, warnings, err := buildContext(e.Context, base)
		if err != nil {
			return fmt.Errorf("image %q: %w", key, err)
		}
		for _, w := range warnings {
			t.warnings = append(t.warnings, fmt.Sprintf("image %q: %s", key, w))
		}
		// A RUN pinning paddlepaddle with pip, or the table's own
		// paddleRelease, puts the image on that release.
		if e.PaddleRelease != "" && e.PaddleRelease != paddleReleaseByTag {
			fromContext.PaddleRelease = e.PaddleRelease
		}
		if pinned := fromContext.PaddleRelease; pinned != "" {
			fromContext = t.repinPaddle(fromContext, pinned)
		}
		built := overlayEntry(fromContext, e)
		if e.PaddleRelease == paddleReleaseByTag && built.Paddle != nil {
			built.PaddleRelease = paddleReleaseByTag // Lookup applies a tag naming a release
		}
		t.entries[key] = built
		return nil
	}
	for _, key := range sortedEntryKeys(t.entries) {
		if err := resolve(key); err != nil && !slices.ContainsFunc(errs, func(e error) bool { return e.Error() == err.Error() }) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// overlayEntry applies the fields an entry of the table sets over the entry
// its context builds: command (which, as an ENTRYPOINT, drops the built
// args unless args are set too), args, env (by name), workingDir,
// overrideCommand; files and hostPaths are added.
func overlayEntry(built, table ImageEntry) ImageEntry {
	e := built
	if len(table.Command) > 0 {
		e.Command, e.Args = table.Command, nil
	}
	if len(table.Args) > 0 {
		e.Args = table.Args
	}
	if len(table.Env) > 0 {
		e.Env = maps.Clone(e.Env)
		if e.Env == nil {
			e.Env = map[string]string{}
		}
		maps.Copy(e.Env, table.Env)
	}
	if len(e.Env) == 0 {
		e.Env = nil
	}
	if table.WorkingDir != "" {
		e.WorkingDir = table.WorkingDir
	}
	e.OverrideCommand = table.OverrideCommand
	e.PaddleRelease = "" // applied by resolveContexts
	e.Files = append(slices.Clone(e.Files), table.Files...)
	for _, p := range table.HostPaths {
		if !slices.Contains(e.HostPaths, p) {
			e.HostPaths = append(e.HostPaths, p)
		}
	}
	e.Context = table.Context
	return e
}
