// Command checkdocs checks the repository's Markdown: every relative link
// resolves (the file, and the heading a #fragment names), and every `make
// TARGET` written in code is a target of the Makefile. `make check-docs`
// runs it; `make test` runs that.
//
//	go run ./hack/checkdocs [repository root]
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/paddlejob/paddlejob/internal/markdown"
)

func main() {
	root := "."
	if len(os.Args) > 1 {
		root = os.Args[1]
	}
	problems, err := check(root)
	if err != nil {
		fmt.Fprintln(os.Stderr, "checkdocs:", err)
		os.Exit(2)
	}
	for _, p := range problems {
		fmt.Fprintln(os.Stderr, p)
	}
	if len(problems) > 0 {
		fmt.Fprintf(os.Stderr, "checkdocs: %d problems in the Markdown files\n", len(problems))
		os.Exit(1)
	}
}

// check returns a line per problem: "file:line: what".
func check(root string) ([]string, error) {
	targets, err := makeTargets(filepath.Join(root, "Makefile"))
	if err != nil {
		return nil, err
	}
	files, err := markdown.Files(root)
	if err != nil {
		return nil, err
	}
	var problems []string
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		rel, _ := filepath.Rel(root, f)
		for _, p := range checkFile(f, string(data), targets) {
			problems = append(problems, rel+":"+p)
		}
	}
	return problems, nil
}

var (
	// inlineLink is [text](target) or ![alt](target), target without spaces.
	inlineLink = regexp.MustCompile(`!?\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	makeCall   = regexp.MustCompile(`(?:^|[\s;&|(])make((?:\s+[A-Za-z0-9_.-]+(?:=\S*)?)+)`)
)

// checkFile checks one Markdown file's links and make targets.
func checkFile(path, text string, targets map[string]bool) []string {
	var problems []string
	markdown.Lines(text, func(n int, code []string, prose string) {
		for _, m := range inlineLink.FindAllStringSubmatch(prose, -1) {
			if p := checkLink(path, m[1]); p != "" {
				problems = append(problems, fmt.Sprintf("%d: %s", n, p))
			}
		}
		for _, c := range code {
			for _, t := range makeTargetsIn(c) {
				if !targets[t] {
					problems = append(problems, fmt.Sprintf("%d: make %s: the Makefile has no target %s", n, t, t))
				}
			}
		}
	})
	return problems
}

// checkLink says what is wrong with a link of the file at path, or "".
func checkLink(path, target string) string {
	if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
		return ""
	}
	file, fragment, _ := strings.Cut(target, "#")
	dest := path
	if file != "" {
		dest = filepath.Join(filepath.Dir(path), file)
		if _, err := os.Stat(dest); err != nil {
			return fmt.Sprintf("link %s: %s does not exist", target, dest)
		}
	}
	if fragment == "" || !strings.HasSuffix(dest, ".md") {
		return ""
	}
	data, err := os.ReadFile(dest)
	if err != nil {
		return fmt.Sprintf("link %s: %v", target, err)
	}
	if !slices.Contains(markdown.Anchors(string(data)), fragment) {
		return fmt.Sprintf("link %s: %s has no heading #%s", target, dest, fragment)
	}
	return ""
}

// makeTargetsIn are the targets of the make commands in a piece of code:
// the words after make up to the first option or variable assignment.
func makeTargetsIn(code string) []string {
	var out []string
	for _, m := range makeCall.FindAllStringSubmatch(code, -1) {
		for _, w := range strings.Fields(m[1]) {
			if strings.Contains(w, "=") || strings.HasPrefix(w, "-") {
				break
			}
			out = append(out, w)
		}
	}
	return out
}

var targetLine = regexp.MustCompile(`^([A-Za-z0-9_.-]+(?:\s+[A-Za-z0-9_.-]+)*)\s*:([^=]|$)`)

// makeTargets reads the targets a Makefile defines.
func makeTargets(path string) (map[string]bool, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	targets := map[string]bool{}
	for _, line := range strings.Split(string(data), "\n") {
		if m := targetLine.FindStringSubmatch(line); m != nil {
			for _, t := range strings.Fields(m[1]) {
				targets[t] = true
			}
		}
	}
	return targets, nil
}
