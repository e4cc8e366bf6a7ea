// Command testfailures prints, from a `go test -json` event file, the last
// lines of output of each failed test and, when the test binary itself
// failed (a timeout's panic, a crash), the first lines of what it printed
// outside any test. `make test-e2e` runs it last, so the end of a long log —
// all a CI excerpt may keep — says which test failed and why, not only that
// one did (a timeout's goroutine dump can otherwise bury the failure).
//
//	go run ./hack/testfailures [-lines N] events.json
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
)

// event is the part of a test2json event the summary reads.
type event struct {
	Action  string
	Package string
	Test    string
	Output  string
}

func main() {
	lines := flag.Int("lines", 30, "lines of output shown per failed test")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: testfailures [-lines N] events.json")
		os.Exit(2)
	}
	f, err := os.Open(flag.Arg(0))
	if err != nil {
		fmt.Fprintln(os.Stderr, "testfailures:", err)
		os.Exit(2)
	}
	defer f.Close()
	if err := summarize(f, os.Stdout, *lines); err != nil {
		fmt.Fprintln(os.Stderr, "testfailures:", err)
		os.Exit(2)
	}
}

// key names a test of a package; a package's own output has no test.
type key struct{ pkg, test string }

// summarize writes the summary of the events read from r: nothing when no
// test failed and no test binary ended abnormally.
func summarize(r io.Reader, w io.Writer, lines int) error {
	outputs := map[key][]string{}
	// Everything a package's binary printed, in order: a timeout's panic
	// is attributed to whichever test ran last, which never fails.
	printed := map[string][]string{}
	var failed []key
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var e event
		if json.Unmarshal(sc.Bytes(), &e) != nil {
			continue // gotestsum's file holds events only; skip anything else
		}
		k := key{e.Package, e.Test}
		switch e.Action {
		case "output":
			line := strings.TrimRight(e.Output, "\n")
			outputs[k] = append(outputs[k], line)
			printed[e.Package] = append(printed[e.Package], line)
		case "fail":
			failed = append(failed, k)
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	// A parent fails with its subtests: show the innermost failures only.
	inner := func(k key) bool {
		for _, o := range failed {
			if o.pkg == k.pkg && k.test != "" && strings.HasPrefix(o.test, k.test+"/") {
				return false
			}
		}
		return true
	}
	for _, k := range failed {
		switch {
		case k.test == "":
			// A package fails with its tests; say more only when its binary
			// ended abnormally, from the line that says how.
			out := printed[k.pkg]
			if i := abnormalEnd(out); i >= 0 {
				fmt.Fprintf(w, "--- %s ended abnormally:\n", k.pkg)
				writeLines(w, head(out[i:], lines))
			}
		case inner(k):
			fmt.Fprintf(w, "--- %s %s failed; its last %d lines:\n", k.pkg, k.test, lines)
			writeLines(w, tail(outputs[k], lines))
		}
	}
	return nil
}

// abnormalEnd is the index of the line where a test binary says it ended
// abnormally (a timeout, a panic, a runtime error), or -1.
func abnormalEnd(out []string) int {
	for i, l := range out {
		if strings.HasPrefix(l, "panic: ") || strings.HasPrefix(l, "fatal error: ") {
			return i
		}
	}
	return -1
}

func head(s []string, n int) []string { return s[:min(n, len(s))] }

func tail(s []string, n int) []string { return s[max(0, len(s)-n):] }

func writeLines(w io.Writer, lines []string) {
	for _, l := range lines {
		fmt.Fprintln(w, "    "+l)
	}
}
