package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func write(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestCheck(t *testing.T) {
	root := t.TempDir()
	write(t, filepath.Join(root, "Makefile"), ".PHONY: test\ntest: lint ## all\n\tgo test ./...\nlint fmt:\n\tgofmt\nX := 1\n")
	write(t, filepath.Join(root, "docs", "a.md"), "# A page\n\n## Local images\n\n## Local images\n\n## `up` flags, and more!\n")
	write(t, filepath.Join(root, "README.md"), strings.Join([]string{
		"See [a](docs/a.md), [images](docs/a.md#local-images), [again](docs/a.md#local-images-1), [flags](docs/a.md#up-flags-and-more),",
		"[web](https://example.com/x.md), [here](#readme), [top](#a-readme).",
		"# A README",
		"Broken: [gone](docs/gone.md) and [no heading](docs/a.md#remote-images).",
		"Run `make test`, `make lint fmt GO_TEST_FLAGS=-v`, `make bench`; make sure prose is not code.",
		"```sh",
		"make fmt && make docker-build IMG=x   # a comment: make sure the target named exists",
		"cd x; make -j2 test",
		"```",
		"A link in code is no link: `[x](nowhere.md)`.",
	}, "\n"))
	problems, err := check(root)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"README.md:2: link #readme: " + filepath.Join(root, "README.md") + " has no heading #readme",
		"README.md:4: link docs/gone.md: " + filepath.Join(root, "docs/gone.md") + " does not exist",
		"README.md:4: link docs/a.md#remote-images: " + filepath.Join(root, "docs/a.md") + " has no heading #remote-images",
		"README.md:5: make bench: the Makefile has no target bench",
		"README.md:7: make docker-build: the Makefile has no target docker-build",
	}
	if strings.Join(problems, "\n") != strings.Join(want, "\n") {
		t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(problems, "\n"), strings.Join(want, "\n"))
	}
}

// TestRepositoryDocs runs the check on this repository, as make check-docs does.
func TestRepositoryDocs(t *testing.T) {
	problems, err := check("../..")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Error(p)
	}
}
