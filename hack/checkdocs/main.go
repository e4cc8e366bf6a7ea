// Command checkdocs checks the repository's Markdown: every relative link
// resolves (the file, and the heading a #fragment names), and every `make
// TARGET` written in code is a target of the Makefile. `make check-docs`
// runs it; `make test` runs that.
//
//	go run ./hack/checkdocs [repository root]
package main

import (
	"bufio"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
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

// skipDirs are not the project's documentation: tools' caches, built web
// assets, dependencies.
var skipDirs = map[string]bool{".git": true, "bin": true, "node_modules": true, "dist": true, "build": true}

// check returns a line per problem: "file:line: what".
func check(root string) ([]string, error) {
	targets, err := makeTargets(filepath.Join(root, "Makefile"))
	if err != nil {
		return nil, err
	}
	var files []string
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != root && (skipDirs[d.Name()] || strings.HasPrefix(d.Name(), ".")) {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(path, ".md") {
			files = append(files, path)
		}
		return nil
	})
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
	codeSpan   = regexp.MustCompile("`([^`]+)`")
	makeCall   = regexp.MustCompile(`(?:^|[\s;&|(])make((?:\s+[A-Za-z0-9_.-]+(?:=\S*)?)+)`)
	heading    = regexp.MustCompile(`^#{1,6}\s+(.*?)\s*#*\s*$`)
	// shellComment starts a comment of a shell line: # at its start or
	// after a blank.
	shellComment = regexp.MustCompile(`(^|\s)#`)
)

// checkFile checks one Markdown file's links and make targets.
func checkFile(path, text string, targets map[string]bool) []string {
	var problems []string
	inFence := false
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			inFence = !inFence
			continue
		}
		var code []string
		if inFence {
			// A shell comment is prose.
			if i := shellComment.FindStringIndex(line); i != nil {
				line = line[:i[0]]
			}
			code = []string{line}
		} else {
			for _, m := range codeSpan.FindAllStringSubmatch(line, -1) {
				code = append(code, m[1])
			}
			prose := codeSpan.ReplaceAllString(line, "")
			for _, m := range inlineLink.FindAllStringSubmatch(prose, -1) {
				if p := checkLink(path, m[1]); p != "" {
					problems = append(problems, fmt.Sprintf("%d: %s", n, p))
				}
			}
		}
		for _, c := range code {
			for _, t := range makeTargetsIn(c) {
				if !targets[t] {
					problems = append(problems, fmt.Sprintf("%d: make %s: the Makefile has no target %s", n, t, t))
				}
			}
		}
	}
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
	if !slices.Contains(anchors(string(data)), fragment) {
		return fmt.Sprintf("link %s: %s has no heading #%s", target, dest, fragment)
	}
	return ""
}

// anchors are the fragments GitHub gives a file's headings: lowercase,
// punctuation dropped, spaces as '-', repeats numbered -1, -2...
func anchors(text string) []string {
	var out []string
	seen := map[string]int{}
	inFence := false
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			inFence = !inFence
			continue
		}
		m := heading.FindStringSubmatch(line)
		if inFence || m == nil {
			continue
		}
		var b strings.Builder
		for _, r := range strings.ToLower(codeSpan.ReplaceAllString(m[1], "$1")) {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r > 127:
				b.WriteRune(r)
			}
		}
		a := b.String()
		if k := seen[a]; k > 0 {
			out = append(out, fmt.Sprintf("%s-%d", a, k))
		} else {
			out = append(out, a)
		}
		seen[a]++
	}
	return out
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
