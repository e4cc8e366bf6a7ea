package node

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/moby/buildkit/frontend/dockerfile/shell"
)

func TestDockerfileSyntax(t *testing.T) {
	// BuildKit's parser: comments and blank lines inside a continuation,
	// lower-case instructions, a RUN's here-document (its body is no
	// instruction), a parser directive for another escape character (which
	// the hand-written parser refused).
	for _, tc := range []struct{ name, dockerfile string }{
		{"continuations, comments, here-documents", `# syntax=docker/dockerfile:1
# A comment.
FROM paddlepaddle/paddle:2.6.1

RUN apt-get update && \
    # a comment inside the continuation
    apt-get install -y \
      curl
COPY train.py \
     /dst/
run <<EOF
echo one
COPY not-an-instruction /x
EOF
ENV A=1
`},
		{"the escape directive", "# escape=`\nFROM paddlepaddle/paddle:2.6.1\nCOPY train.py `\n     /dst/\nENV A=1\n"},
		// What BuildKit's linter would warn about is not an error.
		{"linted", "FROM paddlepaddle/paddle:2.6.1 as Build\nMAINTAINER me\nCOPY train.py /dst/\nENV A=1\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testContext(t, tc.dockerfile, map[string]string{"train.py": "x"})
			got, _, err := buildContext(ctx, noBase)
			if err != nil {
				t.Fatal(err)
			}
			want := ImageEntry{Env: map[string]string{"A": "1"}, Files: []ImageFile{{Source: filepath.Join(ctx, "train.py"), Path: "/dst/train.py"}}}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("got  %+v\nwant %+v", got, want)
			}
		})
	}

	for _, tc := range []struct{ name, src, want string }{
		{"unterminated here-document", "FROM x\nRUN <<EOF\necho\n", "Dockerfile:2: unterminated heredoc"},
		{"COPY here-document", "FROM x\nCOPY <<EOF /a\nhi\nEOF\n", "Dockerfile:2: COPY with a here-document is not supported"},
	} {
		ctx := testContext(t, tc.src, nil)
		if _, _, err := buildContext(ctx, noBase); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one with %q", tc.name, err, tc.want)
		}
	}
}

// A RUN here-document that pins paddlepaddle with pip selects that release,
// as the one-line form does.
func TestRUNHereDocumentPinsPaddle(t *testing.T) {
	ctx := testContext(t, "FROM python:3.10\nRUN <<EOF\nset -e\npython -m pip install paddlepaddle==2.6.1\nEOF\n", nil)
	got, warnings, err := buildContext(ctx, noBase)
	if err != nil {
		t.Fatal(err)
	}
	if got.PaddleRelease != "2.6.1" || len(warnings) != 0 {
		t.Errorf("paddleRelease %q, warnings %q; want 2.6.1 and none", got.PaddleRelease, warnings)
	}
}

func TestDockerWordExpansion(t *testing.T) {
	b := &dockerBuild{lex: shell.NewLex('\\'), fromSeen: true,
		args:  map[string]string{"A": "from the ARG", "DIR": "/srv"},
		entry: ImageEntry{Env: map[string]string{"A": "x", "EMPTY": "", "FILE": "train.tar.gz"}}}
	tests := []struct{ in, want string }{
		{`a b  c`, "a b  c"},
		{`"a b"'c d'e\ f`, "a bc de f"},
		{`"v $A" '$A' \$A`, "v x $A $A"},
		{`$A ${A} ${A}y $Ay $DIR`, "x x xy  /srv"},
		{`${UNSET:-d} ${EMPTY:-d} ${EMPTY-d} ${A:+set} ${UNSET:+set}`, "d d  set "},
		{`/opt/venv/bin:$PATH`, "/opt/venv/bin:" + os.Getenv("PATH")},
		{`"a\"b\\c\d"`, `a"b\c\d`},
		{`cost $ 5`, "cost $ 5"},
		// Pattern removal and substitution, which the hand-written
		// expansion refused.
		{`${FILE%.tar.gz} ${FILE#train.} ${FILE/tar/zip}`, "train tar.gz train.zip.gz"},
	}
	for _, tc := range tests {
		if got, err := b.expand(tc.in); err != nil || got != tc.want {
			t.Errorf("expand(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
	for _, in := range []string{`"open`, `'open`, `${A`, `${UNSET:?must be set}`} {
		if _, err := b.expand(in); err == nil {
			t.Errorf("expand(%q) succeeded", in)
		}
	}
}

// testContext makes a build context with the Dockerfile and the files
// (path: content; a path ending in / is a directory).
func testContext(t *testing.T, dockerfile string, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for p, content := range files {
		full := filepath.Join(dir, p)
		if strings.HasSuffix(p, "/") {
			if err := os.MkdirAll(full, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "Dockerfile"), []byte(dockerfile), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func noBase(string) (ImageEntry, bool, error) { return ImageEntry{}, false, nil }

func TestBuildContext(t *testing.T) {
	for _, tc := range buildContextCases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testContext(t, tc.dockerfile, buildContextFiles)
			got, warnings, err := buildContext(ctx, noBase)
			if err != nil {
				t.Fatal(err)
			}
			want := tc.want(ctx)
			if len(want.entry.Env) == 0 && len(got.Env) == 0 {
				got.Env, want.entry.Env = nil, nil
			}
			if !reflect.DeepEqual(got, want.entry) {
				t.Errorf("got  %+v\nwant %+v", got, want.entry)
			}
			if len(warnings) != want.warnings {
				t.Errorf("warnings %q, want %d", warnings, want.warnings)
			}
		})
	}
}

// buildContextFiles are the files of every buildContextCases context.
var buildContextFiles = map[string]string{
	"train.py": "print(1)", "model.py": "m", "package/a.txt": "a", "package/sub/b.txt": "b", "data.csv": "1,2",
}

// buildContextResult is what buildContext makes of a Dockerfile: the image
// entry and how many warnings.
type buildContextResult struct {
	entry    ImageEntry
	warnings int
}

// buildContextCases are Dockerfiles TestBuildContext builds; want is given
// the context's directory, where the image's files come from.
var buildContextCases = []struct {
	name       string
	dockerfile string
	want       func(ctx string) buildContextResult
}{
	{"a paddlejob image context", `# Written by paddlejob image context.
FROM paddlepaddle/paddle
COPY package/ /example/
WORKDIR /example
ENTRYPOINT ["python", "train.py"]
`, func(ctx string) buildContextResult {
		return buildContextResult{entry: ImageEntry{
			Command: []string{"python", "train.py"}, WorkingDir: "/example",
			Files: []ImageFile{{Source: filepath.Join(ctx, "package"), Path: "/example"}},
		}}
	}},
	{"files, relative paths, shell forms, ENV forms", `FROM base
WORKDIR /wide_and_deep
ADD . /wide_and_deep
COPY train.py model.py lib/
COPY data.csv data/train.csv
WORKDIR sub
COPY ["train.py", "./"]
ENV PYTHONUNBUFFERED=1 HOME_DIR="/root/a b"
ENV GREETING hello   world
ENV PATH=/opt/venv/bin:$PATH LEVEL=${MISSING:-3}
CMD python train.py --epochs 2
`, func(ctx string) buildContextResult {
		return buildContextResult{entry: ImageEntry{
			Args:       []string{"/bin/sh", "-c", "python train.py --epochs 2"},
			WorkingDir: "/wide_and_deep/sub",
			Env: map[string]string{"PYTHONUNBUFFERED": "1", "HOME_DIR": "/root/a b", "GREETING": "hello   world",
				"PATH": "/opt/venv/bin:" + os.Getenv("PATH"), "LEVEL": "3"},
			Files: []ImageFile{
				{Source: ctx, Path: "/wide_and_deep"},
				{Source: filepath.Join(ctx, "train.py"), Path: "/wide_and_deep/lib/train.py"},
				{Source: filepath.Join(ctx, "model.py"), Path: "/wide_and_deep/lib/model.py"},
				{Source: filepath.Join(ctx, "data.csv"), Path: "/wide_and_deep/data/train.csv"},
				{Source: filepath.Join(ctx, "train.py"), Path: "/wide_and_deep/sub/train.py"},
			},
		}}
	}},
	{"a file copied onto a directory of the image goes into it", `FROM base
COPY package /app
COPY train.py /app/sub
COPY train.py /usr
`, func(ctx string) buildContextResult {
		return buildContextResult{entry: ImageEntry{Env: map[string]string{}, Files: []ImageFile{
			{Source: filepath.Join(ctx, "package"), Path: "/app"},
			{Source: filepath.Join(ctx, "train.py"), Path: "/app/sub/train.py"},
			{Source: filepath.Join(ctx, "train.py"), Path: "/usr/train.py"},
		}}}
	}},
	{"globs, ARGs, ignored instructions, RUN warned", `ARG BASE=paddle
FROM ${BASE}:2.6 AS build
ARG DIR=/srv
LABEL maintainer="me"
EXPOSE 6170
USER nobody
VOLUME /data
HEALTHCHECK CMD true
STOPSIGNAL SIGINT
RUN pip install -r requirements.txt
COPY --chown=1000:1000 *.py $DIR/
ENTRYPOINT python
`, func(ctx string) buildContextResult {
		return buildContextResult{warnings: 1, entry: ImageEntry{Env: map[string]string{},
			Command: []string{"/bin/sh", "-c", "python"},
			Files: []ImageFile{
				{Source: filepath.Join(ctx, "model.py"), Path: "/srv/model.py"},
				{Source: filepath.Join(ctx, "train.py"), Path: "/srv/train.py"},
			}}}
	}},
	{"SHELL changes the shell form; CMD before ENTRYPOINT is kept", `FROM base
SHELL ["/bin/bash", "-lc"]
CMD ["--epochs", "3"]
ENTRYPOINT exec python train.py
`, func(string) buildContextResult {
		return buildContextResult{entry: ImageEntry{Env: map[string]string{},
			Command: []string{"/bin/bash", "-lc", "exec python train.py"}, Args: []string{"--epochs", "3"}}}
	}},
}

func TestBuildContextRUNWarning(t *testing.T) {
	ctx := testContext(t, "FROM x\nRUN pip install \\\n  paddlepaddle\n", nil)
	_, warnings, err := buildContext(ctx, noBase)
	if err != nil {
		t.Fatal(err)
	}
	want := "RUN pip install paddlepaddle is not run for local images: what it would install must already be on this machine (" + filepath.Join(ctx, "Dockerfile") + ":2)"
	if len(warnings) != 1 || warnings[0] != want {
		t.Errorf("warnings %q, want %q", warnings, want)
	}
}

func TestBuildContextErrors(t *testing.T) {
	files := map[string]string{"train.py": "x", "dir/": "", "archive.tar.gz": "\x1f\x8b\x08\x00"}
	tests := []struct{ name, dockerfile, want string }{
		{"multi-stage", "FROM a AS build\nCOPY train.py /x\nFROM b\n", ":3: a second FROM: multi-stage builds are not supported"},
		{"COPY --from", "FROM a\nCOPY --from=build /x /y\n", ":2: COPY --from=build: multi-stage builds"},
		{"unknown instruction", "FROM a\n\n# comment\nFROB x\n", ":4: unknown instruction: FROB"},
		{"no FROM", "ARG A=1\n", "no FROM instruction"},
		{"no instruction", "# nothing\n", "file with no instructions"},
		{"instruction before FROM", "ENV A=1\nFROM a\n", ":1: ENV before FROM"},
		{"escaping the context", "FROM a\nCOPY ../secret /x\n", ":2: COPY ../secret: the source is outside the build context"},
		{"escaping deeper", "FROM a\nCOPY dir/../../secret /x\n", "outside the build context"},
		{"missing source", "FROM a\nCOPY \\\n  missing.py /x\n", ":2: COPY missing.py: not found in the build context"},
		{"no glob match", "FROM a\nCOPY *.txt /x/\n", "no file of the build context matches"},
		{"several sources, file destination", "FROM a\nCOPY train.py dir /x\n", "the destination must be a directory and end with /"},
		{"ADD URL", "FROM a\nADD https://example.com/x.tgz /x\n", ":2: ADD https://example.com/x.tgz: URLs are not supported"},
		{"ADD archive", "FROM a\nADD archive.tar.gz /x/\n", ":2: ADD " + "CTX/archive.tar.gz: extracting archives is not supported"},
		{"COPY to /proc", "FROM a\nCOPY train.py /proc/x\n", "/proc and /dev are the sandbox's own"},
		{"bad SHELL", "FROM a\nSHELL /bin/bash\n", ":2: SHELL requires the arguments to be in JSON form"},
		{"bad ENV", "FROM a\nENV =x\n", ":2: ENV names can not be blank"},
		{"unterminated quote", "FROM a\nENV A=\"x\n", "unexpected end of statement while looking for matching double-quote"},
		{"COPY --exclude", "FROM a\nCOPY --exclude=*.md . /x\n", ":2: COPY --exclude=*.md is not supported"},
		{"unknown COPY flag", "FROM a\nCOPY --frob . /x\n", ":2: unknown flag: --frob"},
		{"COPY --parents", "FROM a\nCOPY --parents train.py /x/\n", ":2: COPY --parents is not supported"},
		{"ADD --checksum", "FROM a\nADD --checksum=sha256:0 train.py /x\n", ":2: ADD --checksum and --keep-git-dir are for URLs"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testContext(t, tc.dockerfile, files)
			_, _, err := buildContext(ctx, noBase)
			want := strings.ReplaceAll(tc.want, "CTX", ctx)
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("error %v, want one with %q", err, want)
			}
			if strings.HasPrefix(want, ":") && !strings.Contains(err.Error(), filepath.Join(ctx, "Dockerfile")+want) {
				t.Errorf("error %q does not name the file and line", err)
			}
		})
	}
	outside := t.TempDir()
	ctx := testContext(t, "FROM a\nCOPY link /x\n", nil)
	if err := os.Symlink(outside, filepath.Join(ctx, "link")); err != nil {
		t.Fatal(err)
	}
	if _, _, err := buildContext(ctx, noBase); err == nil || !strings.Contains(err.Error(), "leads outside the build context") {
		t.Errorf("a symlink out of the context: %v", err)
	}
	if _, _, err := buildContext("relative/ctx", noBase); err == nil || !strings.Contains(err.Error(), "absolute") {
		t.Errorf("a relative context: %v", err)
	}
}

func TestImageTableBuildsContextsFromTheirBase(t *testing.T) {
	runtime := t.TempDir()
	baseFiles := t.TempDir()
	appCtx := testContext(t, `FROM paddlepaddle/paddle:2.6.1
COPY train.py /app/
WORKDIR /app
ENV PYTHONPATH=/app:$PYTHONPATH
CMD ["python3", "train.py"]
`, map[string]string{"train.py": "print(1)"})
	// The child's ENTRYPOINT resets the CMD it inherits.
	entryCtx := testContext(t, "FROM my/app:v1\nENTRYPOINT [\"python3\", \"-u\"]\n", nil)
	// A CMD alone keeps the ENTRYPOINT.
	cmdCtx := testContext(t, "FROM my/entry\nCMD [\"x.py\"]\n", nil)
	hostCtx := testContext(t, "FROM ubuntu:22.04\nCMD [\"true\"]\n", nil)
	loopA := testContext(t, "FROM loop/b\n", nil)
	loopB := testContext(t, "FROM loop/a\n", nil)

	entries := map[string]ImageEntry{
		"paddlepaddle/paddle": {
			Command:   []string{"/bin/bash"},
			Args:      []string{"-l"},
			Env:       map[string]string{"PATH": runtime + "/bin:/usr/bin:/bin", "PYTHONPATH": "/base"},
			HostPaths: []string{runtime},
			Files:     []ImageFile{{Source: baseFiles, Path: "/opt/base"}},
		},
		"my/app:v1":  {Context: appCtx},
		"my/entry":   {Context: entryCtx},
		"my/cmd":     {Context: cmdCtx, Env: map[string]string{"EXTRA": "1"}, HostPaths: []string{"/srv/extra"}},
		"ubuntu-ish": {Context: hostCtx},
	}
	table, err := newImageTable("images.yaml", entries)
	if err != nil {
		t.Fatal(err)
	}
	app, _ := table.Lookup("my/app:v1")
	wantApp := ImageEntry{
		Command:    []string{"/bin/bash"},
		Args:       []string{"python3", "train.py"},
		Env:        map[string]string{"PATH": runtime + "/bin:/usr/bin:/bin", "PYTHONPATH": "/app:/base"},
		WorkingDir: "/app",
		HostPaths:  []string{runtime},
		Files:      []ImageFile{{Source: baseFiles, Path: "/opt/base"}, {Source: filepath.Join(appCtx, "train.py"), Path: "/app/train.py"}},
		Context:    appCtx,
	}
	if !reflect.DeepEqual(app, wantApp) {
		t.Errorf("my/app:v1 = %+v\nwant       %+v", app, wantApp)
	}
	entry, _ := table.Lookup("my/entry:latest")
	if !reflect.DeepEqual(entry.Command, []string{"python3", "-u"}) || entry.Args != nil || entry.WorkingDir != "/app" || len(entry.Files) != 2 {
		t.Errorf("my/entry = %+v: want the ENTRYPOINT, no CMD, the base's files and workdir", entry)
	}
	cmd, _ := table.Lookup("my/cmd")
	if !reflect.DeepEqual(cmd.Command, []string{"python3", "-u"}) || !reflect.DeepEqual(cmd.Args, []string{"x.py"}) ||
		cmd.Env["EXTRA"] != "1" || cmd.Env["PYTHONPATH"] != "/app:/base" || !reflect.DeepEqual(cmd.HostPaths, []string{runtime, "/srv/extra"}) {
		t.Errorf("my/cmd = %+v", cmd)
	}
	host, _ := table.Lookup("ubuntu-ish")
	if !reflect.DeepEqual(host.Args, []string{"true"}) || host.Command != nil || host.Files != nil || host.HostPaths != nil {
		t.Errorf("an image FROM one the table lacks = %+v", host)
	}
	// The base entry itself is unchanged.
	if base, _ := table.Lookup("paddlepaddle/paddle:2.6.1"); base.Env["PYTHONPATH"] != "/base" || len(base.Files) != 1 {
		t.Errorf("the base entry changed: %+v", base)
	}

	if _, err := newImageTable("", map[string]ImageEntry{"loop/a": {Context: loopA}, "loop/b": {Context: loopB}}); err == nil ||
		!strings.Contains(err.Error(), "lead back to it") {
		t.Errorf("FROM loop: %v", err)
	}
	self := testContext(t, "FROM self/img:base\n", nil)
	if _, err := newImageTable("", map[string]ImageEntry{"self/img": {Context: self}}); err == nil ||
		!strings.Contains(err.Error(), "this image's own") {
		t.Errorf("FROM itself: %v", err)
	}
	broken := testContext(t, "FROM x\nCOPY nothing /x\n", nil)
	if _, err := newImageTable("", map[string]ImageEntry{"broken": {Context: broken}}); err == nil ||
		!strings.Contains(err.Error(), `image "broken": `+filepath.Join(broken, "Dockerfile")+":2: COPY nothing") {
		t.Errorf("a broken Dockerfile: %v", err)
	}
}

func TestLoadImageTableWithContext(t *testing.T) {
	ctx := testContext(t, "FROM python:3.12\nCOPY train.py /trainer/\nWORKDIR /trainer\nRUN pip install paddlepaddle\nCMD [\"python3\", \"train.py\"]\n",
		map[string]string{"train.py": "print('hi')"})
	table := filepath.Join(t.TempDir(), "images.yaml")
	if err := os.WriteFile(table, []byte("images:\n  my/trainer:v1:\n    context: "+ctx+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := LoadImageTable(table)
	if err != nil {
		t.Fatal(err)
	}
	e, ok := got.Lookup("my/trainer:v1")
	if !ok || e.WorkingDir != "/trainer" || !reflect.DeepEqual(e.Args, []string{"python3", "train.py"}) ||
		!reflect.DeepEqual(e.Files, []ImageFile{{Source: filepath.Join(ctx, "train.py"), Path: "/trainer/train.py"}}) {
		t.Errorf("my/trainer:v1 = %+v", e)
	}
	if w := got.Warnings(); len(w) != 1 || !strings.HasPrefix(w[0], `image "my/trainer:v1": RUN pip install paddlepaddle is not run for local images`) {
		t.Errorf("warnings %q", w)
	}
	for _, bad := range []string{
		"images:\n  x:\n    context: relative/dir\n",
		"images:\n  x:\n    files: [{source: rel, path: /x}]\n",
		"images:\n  x:\n    files: [{source: /abs, path: rel}]\n",
		"images:\n  x:\n    hostPaths: [/]\n",
	} {
		if err := os.WriteFile(table, []byte(bad), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := LoadImageTable(table); err == nil || !strings.Contains(err.Error(), table) {
			t.Errorf("%q: %v", bad, err)
		}
	}
}
