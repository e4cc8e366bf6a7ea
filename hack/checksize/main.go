// Command checksize keeps the Go and Python code in pieces a reader can
// hold: no file over 500 lines and no function over 80. The files and functions over
// those limits when the rule came are listed in over-limit.txt with their
// size then; each may shrink, none may grow, and none may be added. An
// entry that is back within its limit must leave the list (-write rewrites
// it from the tree). `make lint` runs it.
//
//	go run ./hack/checksize [-write] [repository root]
package main

import (
	"bufio"
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

const (
	maxFileLines = 500
	maxFuncLines = 80
	listName     = "hack/checksize/over-limit.txt"
)

func main() {
	write := flag.Bool("write", false, "rewrite "+listName+" from the tree instead of checking")
	flag.Parse()
	root := "."
	if flag.NArg() > 0 {
		root = flag.Arg(0)
	}
	found, err := measure(os.DirFS(root))
	if err != nil {
		fmt.Fprintln(os.Stderr, "checksize:", err)
		os.Exit(2)
	}
	listPath := filepath.Join(root, listName)
	if *write {
		if err := os.WriteFile(listPath, []byte(format(found)), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "checksize:", err)
			os.Exit(2)
		}
		return
	}
	data, err := os.ReadFile(listPath)
	if err != nil {
		fmt.Fprintln(os.Stderr, "checksize:", err)
		os.Exit(2)
	}
	allowed, err := parse(string(data))
	if err != nil {
		fmt.Fprintf(os.Stderr, "checksize: %s: %v\n", listName, err)
		os.Exit(2)
	}
	problems := compare(found, allowed)
	for _, p := range problems {
		fmt.Fprintln(os.Stderr, p)
	}
	if len(problems) > 0 {
		fmt.Fprintf(os.Stderr, "checksize: %d problems: split what grew (files up to %d lines, functions up to %d); after a shrink, go run ./hack/checksize -write\n",
			len(problems), maxFileLines, maxFuncLines)
		os.Exit(1)
	}
}

// entry is a file (Func empty) or a function over its limit, and its size
// in lines.
type entry struct {
	Path, Func string
	Lines      int
}

func (e entry) key() string { return e.Path + " " + e.Func }

// skipDirs hold no code of the project's own.
var skipDirs = []string{".git", "bin", "node_modules", "testdata", "vendor"}

// measure finds every file and function over its limit; generated files
// are not the project's to split.
func measure(fsys fs.FS) ([]entry, error) {
	var out []entry
	fset := token.NewFileSet()
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != "." && (slices.Contains(skipDirs, d.Name()) || strings.HasPrefix(d.Name(), ".")) {
				return fs.SkipDir
			}
			return nil
		}
		isPython := strings.HasSuffix(p, ".py")
		if !isPython && (!strings.HasSuffix(p, ".go") || strings.HasPrefix(d.Name(), "zz_generated")) {
			return nil
		}
		src, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		if isPython {
			out = append(out, measurePython(p, string(src))...)
			return nil
		}
		f, err := parser.ParseFile(fset, p, src, parser.ParseComments)
		if err != nil {
			return err
		}
		if ast.IsGenerated(f) {
			return nil
		}
		if n := fset.File(f.Pos()).LineCount(); n > maxFileLines {
			out = append(out, entry{Path: p, Lines: n})
		}
		for _, decl := range f.Decls {
			fd, ok := decl.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			if n := fset.Position(fd.End()).Line - fset.Position(fd.Pos()).Line + 1; n > maxFuncLines {
				out = append(out, entry{Path: p, Func: funcName(fd), Lines: n})
			}
		}
		return nil
	})
	return out, err
}

// pythonDef is a def line: its indentation and name.
var pythonDef = regexp.MustCompile(`^( *)(?:async\s+)?def\s+(\w+)`)

// pythonClass is a class line at the top level of a module.
var pythonClass = regexp.MustCompile(`^class\s+(\w+)`)

// measurePython finds a Python file over its limit and the module's
// functions and its classes' methods over theirs (a nested function counts
// in the one that holds it), named Func or Class.method. A function spans
// from its first decorator to its last line of code: the last line before
// the next one indented no deeper than its def that is neither blank nor a
// comment (a string's lines indented less would end it early; the
// project's code has none).
func measurePython(path, src string) []entry {
	lines := strings.Split(strings.TrimSuffix(src, "\n"), "\n")
	var out []entry
	if len(lines) > maxFileLines {
		out = append(out, entry{Path: path, Lines: len(lines)})
	}
	indent := func(l string) int { return len(l) - len(strings.TrimLeft(l, " ")) }
	isCode := func(l string) bool {
		t := strings.TrimSpace(l)
		return t != "" && !strings.HasPrefix(t, "#")
	}
	class := ""
	for i, l := range lines {
		if m := pythonClass.FindStringSubmatch(l); m != nil {
			class = m[1]
			continue
		}
		if isCode(l) && indent(l) == 0 && !strings.HasPrefix(l, "@") && !pythonDef.MatchString(l) {
			class = ""
		}
		m := pythonDef.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		depth, name := len(m[1]), m[2]
		switch {
		case depth == 0:
			class = ""
		case depth == 4 && class != "":
			name = class + "." + name
		default:
			continue
		}
		start := i
		for start > 0 && strings.HasPrefix(strings.TrimSpace(lines[start-1]), "@") && indent(lines[start-1]) == depth {
			start--
		}
		end := i
		for j := i + 1; j < len(lines); j++ {
			if !isCode(lines[j]) {
				continue
			}
			if indent(lines[j]) <= depth && !strings.HasPrefix(strings.TrimSpace(lines[j]), ")") {
				break
			}
			end = j
		}
		if n := end - start + 1; n > maxFuncLines {
			out = append(out, entry{Path: path, Func: name, Lines: n})
		}
	}
	return out
}

// funcName names a function as a reader finds it: Type.Method or Func.
func funcName(fd *ast.FuncDecl) string {
	if fd.Recv == nil || len(fd.Recv.List) == 0 {
		return fd.Name.Name
	}
	t := fd.Recv.List[0].Type
	if s, ok := t.(*ast.StarExpr); ok {
		t = s.X
	}
	if g, ok := t.(*ast.IndexExpr); ok {
		t = g.X
	}
	if id, ok := t.(*ast.Ident); ok {
		return id.Name + "." + fd.Name.Name
	}
	return fd.Name.Name
}

// compare lists what is over its limit and not allowed: new, or grown past
// its recorded size; and recorded entries now within their limit.
func compare(found, allowed []entry) []string {
	recorded := map[string]int{}
	for _, a := range allowed {
		recorded[a.key()] = a.Lines
	}
	var problems []string
	seen := map[string]bool{}
	for _, f := range found {
		seen[f.key()] = true
		limit, what := maxFileLines, "file"
		if f.Func != "" {
			limit, what = maxFuncLines, "function "+f.Func
		}
		was, ok := recorded[f.key()]
		switch {
		case !ok:
			problems = append(problems, fmt.Sprintf("%s: %s has %d lines, over the limit of %d", f.Path, what, f.Lines, limit))
		case f.Lines > was:
			problems = append(problems, fmt.Sprintf("%s: %s grew from %d to %d lines; it is over the limit of %d and may only shrink", f.Path, what, was, f.Lines, limit))
		}
	}
	for _, a := range allowed {
		if !seen[a.key()] {
			problems = append(problems, fmt.Sprintf("%s: %q is within its limit now (or gone): remove it from %s", listName, strings.TrimSpace(a.key()), listName))
		}
	}
	return problems
}

// format writes entries as the list's lines: "path lines" for a file,
// "path func lines" for a function, sorted.
func format(es []entry) string {
	var b strings.Builder
	b.WriteString("# Files over 500 lines and functions over 80 when hack/checksize came: each may\n")
	b.WriteString("# only shrink. Rewrite with `go run ./hack/checksize -write` after a split.\n")
	slices.SortFunc(es, func(a, b entry) int { return strings.Compare(a.key(), b.key()) })
	for _, e := range es {
		if e.Func == "" {
			fmt.Fprintf(&b, "%s %d\n", e.Path, e.Lines)
		} else {
			fmt.Fprintf(&b, "%s %s %d\n", e.Path, e.Func, e.Lines)
		}
	}
	return b.String()
}

func parse(s string) ([]entry, error) {
	var out []entry
	sc := bufio.NewScanner(strings.NewReader(s))
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		fields := strings.Fields(text)
		if len(fields) < 2 || len(fields) > 3 {
			return nil, fmt.Errorf("line %d: %q is not \"path [function] lines\"", line, text)
		}
		n, err := strconv.Atoi(fields[len(fields)-1])
		if err != nil {
			return nil, fmt.Errorf("line %d: %q: the last field is not a line count", line, text)
		}
		e := entry{Path: fields[0], Lines: n}
		if len(fields) == 3 {
			e.Func = fields[1]
		}
		out = append(out, e)
	}
	return out, sc.Err()
}
