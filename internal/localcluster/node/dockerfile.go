package node

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/moby/buildkit/frontend/dockerfile/instructions"
	"github.com/moby/buildkit/frontend/dockerfile/parser"
	"github.com/moby/buildkit/frontend/dockerfile/shell"
)

// A local image can be built from a Docker build context: the node reads its
// Dockerfile into an ImageEntry when the image table is loaded. BuildKit's
// Dockerfile frontend packages read the file as docker build does (parser:
// continuation lines, comments, parser directives, here-documents;
// instructions: the typed instructions and their flags; shell: the word and
// variable expansion). What is ours is what an instruction means for an
// image made of host files: FROM starts from the table's entry for the base,
// COPY and ADD add files of the context (dockerfile_copy.go, with the
// context's .dockerignore applied: dockerignore.go), WORKDIR, ENV,
// ENTRYPOINT, CMD, SHELL and ARG set the entry's fields, LABEL, EXPOSE,
// USER, VOLUME, HEALTHCHECK, STOPSIGNAL and MAINTAINER do not matter here,
// ONBUILD is ignored with a warning, and RUN cannot run: it is warned about,
// unless it pins paddlepaddle with pip (paddlerelease.go). Multi-stage
// builds are refused.

// dockerfileName is the Dockerfile of a context.
const dockerfileName = "Dockerfile"

// dockerShell is the shell of the shell forms, until a SHELL instruction.
var dockerShell = []string{"/bin/sh", "-c"}

// dockerBuild interprets a Dockerfile's instructions into an image entry.
type dockerBuild struct {
	file    string // the Dockerfile, for messages
	context string // the context, symlinks resolved
	// base finds the FROM image's entry in the table: false when the table
	// has none (the host's directories then stand in for it).
	base func(ref string) (ImageEntry, bool, error)
	// ignore is the context's .dockerignore, nil without one.
	ignore *contextIgnore
	lex    *shell.Lex

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
	parsed, err := parser.Parse(bytes.NewReader(data))
	if err != nil {
		return ImageEntry{}, nil, fmt.Errorf("%s:%d: %w", file, errorLine(err), err)
	}
	ignore, err := readContextIgnore(real)
	if err != nil {
		return ImageEntry{}, nil, err
	}
	b := &dockerBuild{file: file, context: real, base: base, ignore: ignore, lex: shell.NewLex(parsed.EscapeToken),
		globalArgs: map[string]string{}, args: map[string]string{}, shell: dockerShell, dirs: map[string]bool{}}
	for _, w := range parsed.Warnings {
		line := 0
		if w.Location != nil {
			line = w.Location.Start.Line
		}
		b.warn(line, w.Short)
	}
	for _, node := range parsed.AST.Children {
		if err := b.apply(node); err != nil {
			return ImageEntry{}, nil, fmt.Errorf("%s:%d: %w", file, node.StartLine, err)
		}
	}
	if !b.fromSeen {
		return ImageEntry{}, nil, fmt.Errorf("%s: no FROM instruction", file)
	}
	return b.entry, b.warnings, nil
}

// errorLine is the Dockerfile line a parser error names, 0 for none.
func errorLine(err error) int {
	var located *parser.LocationError
	if errors.As(err, &located) && len(located.Locations) > 0 && len(located.Locations[0]) > 0 {
		return located.Locations[0][0].Start.Line
	}
	return 0
}

func (b *dockerBuild) warn(line int, msg string) {
	where := b.file
	if line > 0 {
		where = fmt.Sprintf("%s:%d", b.file, line)
	}
	b.warnings = append(b.warnings, msg+" ("+where+")")
}

// apply reads one instruction, expands its words as BuildKit does (from the
// ARGs before FROM for FROM itself, from the image's ENV over the ARGs
// after it), and applies it to the entry.
func (b *dockerBuild) apply(node *parser.Node) error {
	parsed, err := instructions.ParseInstruction(node)
	if err != nil {
		return err
	}
	if stage, ok := parsed.(*instructions.Stage); ok {
		return b.from(stage)
	}
	if _, isArg := parsed.(*instructions.ArgCommand); !b.fromSeen && !isArg {
		return fmt.Errorf("%s before FROM", strings.ToUpper(node.Value))
	}
	if c, ok := parsed.(instructions.SupportsSingleWordExpansion); ok {
		if err := c.Expand(b.expand); err != nil {
			return err
		}
	}
	switch c := parsed.(type) {
	case *instructions.ArgCommand:
		b.arg(c)
	case *instructions.EnvCommand:
		for _, kv := range c.Env {
			b.entry.Env[kv.Key] = kv.Value
		}
	case *instructions.WorkdirCommand:
		return b.workdirTo(c.Path)
	case *instructions.CopyCommand:
		return b.copyCommand(c, node.StartLine)
	case *instructions.AddCommand:
		return b.addCommand(c, node.StartLine)
	case *instructions.EntrypointCommand:
		b.entry.Command = b.commandLine(c.ShellDependantCmdLine)
		if !b.cmdSet {
			// Docker: an ENTRYPOINT resets the CMD of the base image.
			b.entry.Args = nil
		}
	case *instructions.CmdCommand:
		b.entry.Args = b.commandLine(c.ShellDependantCmdLine)
		b.cmdSet = true
	case *instructions.ShellCommand:
		b.shell = c.Shell
	case *instructions.RunCommand:
		b.run(c, node.StartLine)
	case *instructions.OnbuildCommand:
		b.warn(node.StartLine, "ONBUILD is ignored for local images: images built FROM this one do not run it")
	}
	// LABEL, EXPOSE, USER, VOLUME, HEALTHCHECK, STOPSIGNAL and MAINTAINER
	// do not matter for a local image.
	return nil
}

func (b *dockerBuild) from(stage *instructions.Stage) error {
	if b.fromSeen {
		return errors.New("a second FROM: multi-stage builds are not supported for local images")
	}
	ref, _, err := b.lex.ProcessWord(stage.BaseName, dockerVars(b.globalArgs))
	if err != nil {
		return err
	}
	b.fromSeen = true
	base, known, err := b.base(ref)
	if err != nil {
		return fmt.Errorf("FROM %s: %w", ref, err)
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

// arg records ARG defaults: before FROM for FROM, after it for the rest;
// ARG NAME after FROM brings in the global default.
func (b *dockerBuild) arg(c *instructions.ArgCommand) {
	for _, kv := range c.Args {
		switch {
		case !b.fromSeen && kv.Value != nil:
			b.globalArgs[kv.Key] = *kv.Value
		case !b.fromSeen:
		case kv.Value != nil:
			b.args[kv.Key] = *kv.Value
		default:
			if v, ok := b.globalArgs[kv.Key]; ok {
				b.args[kv.Key] = v
			}
		}
	}
}

func (b *dockerBuild) workdirTo(dir string) error {
	if dir == "" {
		return errors.New("WORKDIR needs one directory")
	}
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
}

// run warns that a RUN is not run, unless it pins paddlepaddle with pip:
// the image then holds that release and runs on the node's runtime for it.
// A RUN's here-documents are its script too.
func (b *dockerBuild) run(c *instructions.RunCommand, line int) {
	script := strings.Join(c.CmdLine, " ")
	for _, f := range c.Files {
		script += "\n" + f.Data
	}
	if v := paddleReleasePinnedBy(script); v != "" {
		b.entry.PaddleRelease = v
		return
	}
	b.warn(line, fmt.Sprintf("RUN %s is not run for local images: what it would install must already be on this machine", shorten(strings.Join(c.CmdLine, " "), 80)))
}

// commandLine reads ENTRYPOINT or CMD: the exec form as it is, the shell
// form run by the shell.
func (b *dockerBuild) commandLine(c instructions.ShellDependantCmdLine) []string {
	if len(c.CmdLine) == 0 {
		return nil
	}
	if !c.PrependShell {
		return slices.Clone(c.CmdLine)
	}
	return append(slices.Clone(b.shell), strings.Join(c.CmdLine, " "))
}

func (b *dockerBuild) workdir() string {
	if b.entry.WorkingDir == "" {
		return "/"
	}
	return b.entry.WorkingDir
}

// expand expands one word of an instruction with BuildKit's shell lexer:
// quotes removed, $NAME and ${NAME...} from the image's ENV over the ARGs.
func (b *dockerBuild) expand(word string) (string, error) {
	vars := dockerVars{}
	maps.Copy(vars, b.args)
	maps.Copy(vars, b.entry.Env)
	if _, ok := vars["PATH"]; !ok {
		// The base sets no PATH: the container would have the node's.
		vars["PATH"] = standardPath
		if p := os.Getenv("PATH"); p != "" {
			vars["PATH"] = p
		}
	}
	out, _, err := b.lex.ProcessWord(word, vars)
	return out, err
}

// dockerVars are the variables a word is expanded with.
type dockerVars map[string]string

var _ shell.EnvGetter = dockerVars(nil)

func (v dockerVars) Get(name string) (string, bool) {
	value, ok := v[name]
	return value, ok
}

func (v dockerVars) Keys() []string { return slices.Sorted(maps.Keys(v)) }
