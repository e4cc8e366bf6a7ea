// Package markdown reads what the repository's documentation checks need
// from a Markdown text: its headings' anchors, and the code and prose of
// each line. hack/checkdocs (links, make targets) and the CLI's docs test
// (commands and flags) read the docs the same way through it.
package markdown

import (
	"bufio"
	"fmt"
	"io/fs"
	"path/filepath"
	"regexp"
	"strings"
)

// skipDirs are not the project's documentation: tools' caches, built web
// assets, dependencies.
var skipDirs = map[string]bool{"bin": true, "node_modules": true, "dist": true, "build": true}

// Files are the repository's Markdown files under root, hidden directories
// and those of skipDirs left out.
func Files(root string) ([]string, error) {
	var files []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
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
	return files, err
}

var (
	codeSpan = regexp.MustCompile("`([^`]+)`")
	heading  = regexp.MustCompile(`^#{1,6}\s+(.*?)\s*#*\s*$`)
	// shellComment starts a comment of a shell line: # at its start or
	// after a blank.
	shellComment = regexp.MustCompile(`(^|\s)#`)
)

// Lines calls fn for each line of text with its number (from 1), the code
// on it and its prose. In a fenced block the code is the line without its
// shell comment (a comment is prose, and not checked) and the prose is "";
// elsewhere the code is the line's code spans and the prose the line
// without them. Fence lines themselves are skipped.
func Lines(text string, fn func(n int, code []string, prose string)) {
	inFence := false
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			inFence = !inFence
			continue
		}
		if inFence {
			if i := shellComment.FindStringIndex(line); i != nil {
				line = line[:i[0]]
			}
			fn(n, []string{line}, "")
			continue
		}
		var code []string
		for _, m := range codeSpan.FindAllStringSubmatch(line, -1) {
			code = append(code, m[1])
		}
		fn(n, code, codeSpan.ReplaceAllString(line, ""))
	}
}

// Anchors are the fragments GitHub gives a text's headings: lowercase,
// punctuation dropped, spaces as '-', repeats numbered -1, -2...
func Anchors(text string) []string {
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
