package paddleruntime

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// pinSet is a requirements file parsed (one of pins/ for a Paddle runtime):
// the file is the only place the versions are written down.
type pinSet struct {
	raw    []byte
	paddle string // the paddlepaddle version
	// parameterServer is what the file's `# parameter-server: yes|no` line
	// declares: whether the paddlepaddle wheel carries the parameter-server
	// runtime. An install checks it against the installed wheel.
	parameterServer bool
	// hashed: every pin carries --hash options, so pip installs with
	// --require-hashes.
	hashed bool
	// pyMin and pyMax bound the CPython minor versions every pinned package
	// has a wheel for, both included: {3, 11} and {3, 13}.
	pyMin, pyMax [2]int
	// env names a pinned environment other than the Paddle runtime
	// (EnsureEnv): its cache directory and the readable part of its key.
	// It is empty for the Paddle runtime.
	env string
	// reqs are the pins in file order: a failed resolve asks pip about
	// each alone.
	reqs []pin
}

// pin is one exact requirement of a pinSet.
type pin struct {
	name, version string
	hashes        []string // sha256, hex
	line          string   // name==version and its --hash options, on one line
}

// spec is the requirement without its hashes: name==version.
func (r pin) spec() string { return r.name + "==" + r.version }

var (
	pinLine    = regexp.MustCompile(`^([A-Za-z0-9][A-Za-z0-9._-]*)==([A-Za-z0-9.+!-]+)((?:\s+--hash=sha256:[0-9a-f]{64})*)$`)
	pythonLine = regexp.MustCompile(`^#\s*python:\s*(\d+)\.(\d+)\s*-\s*(\d+)\.(\d+)\s*$`)
	psLine     = regexp.MustCompile(`^#\s*parameter-server:\s*(\S+)\s*$`)
)

// parsePins reads a Paddle runtime's pin file: a pinned set that pins
// paddlepaddle, every package with its hashes, and says whether the wheel
// carries the parameter-server runtime.
func parsePins(raw []byte) (pinSet, error) {
	p, err := parseRequirements(raw)
	if err != nil {
		return pinSet{}, err
	}
	if p.paddle == "" {
		return pinSet{}, fmt.Errorf("the pins name no paddlepaddle version")
	}
	if !p.hashed {
		return pinSet{}, fmt.Errorf("paddlepaddle %s: every pin needs its --hash=sha256:... options (pip installs with --require-hashes)", p.paddle)
	}
	var m [][]byte
	for _, line := range bytes.Split(raw, []byte("\n")) {
		if m = psLine.FindSubmatch(bytes.TrimSpace(line)); m != nil {
			break
		}
	}
	switch {
	case m == nil:
		return pinSet{}, fmt.Errorf("paddlepaddle %s: the pins need a line `# parameter-server: yes` or `no`, saying whether the wheel carries the parameter-server runtime", p.paddle)
	case string(m[1]) == "yes":
		p.parameterServer = true
	case string(m[1]) != "no":
		return pinSet{}, fmt.Errorf("paddlepaddle %s: `# parameter-server: %s`: want yes or no", p.paddle, m[1])
	}
	return p, nil
}

// parseRequirements reads a requirements file and insists that every
// package is pinned exactly, because pip installs it with --no-deps: a loose
// line would float.
func parseRequirements(raw []byte) (pinSet, error) {
	p := pinSet{raw: raw}
	sc := bufio.NewScanner(bytes.NewReader(raw))
	pinned, hashed := 0, 0
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		// A pin continues on the lines after a backslash: its --hash options.
		for start := n; strings.HasSuffix(line, `\`) && sc.Scan(); n++ {
			next := strings.TrimSpace(sc.Text())
			if strings.HasPrefix(next, "#") {
				return pinSet{}, fmt.Errorf("line %d: a comment inside the pin that starts on line %d", n+1, start)
			}
			line = strings.TrimSpace(strings.TrimSuffix(line, `\`)) + " " + next
		}
		if m := pythonLine.FindStringSubmatch(line); m != nil {
			p.pyMin = [2]int{atoi(m[1]), atoi(m[2])}
			p.pyMax = [2]int{atoi(m[3]), atoi(m[4])}
			continue
		}
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		m := pinLine.FindStringSubmatch(line)
		if m == nil {
			return pinSet{}, fmt.Errorf("requirements.txt line %d: %q is not an exact pin (name==version, optionally followed by --hash=sha256:... options)", n, line)
		}
		if strings.EqualFold(m[1], "paddlepaddle") {
			p.paddle = m[2]
		}
		r := pin{name: m[1], version: m[2], line: line}
		for _, h := range strings.Fields(m[3]) {
			r.hashes = append(r.hashes, strings.TrimPrefix(h, "--hash=sha256:"))
		}
		p.reqs = append(p.reqs, r)
		pinned++
		if m[3] != "" {
			hashed++
		}
	}
	if err := sc.Err(); err != nil {
		return pinSet{}, err
	}
	if hashed > 0 && hashed < pinned {
		return pinSet{}, fmt.Errorf("%d of %d pins carry --hash options: pip's hash-checking mode needs them on every pin", hashed, pinned)
	}
	p.hashed = pinned > 0 && hashed == pinned
	if p.pyMin == [2]int{} || compareMinor(p.pyMin, p.pyMax) > 0 {
		return pinSet{}, fmt.Errorf("requirements.txt needs a line like `# python: 3.11-3.13` naming the CPython versions the pinned wheels support")
	}
	return p, nil
}

func mustParsePins(raw []byte) pinSet {
	p, err := parsePins(raw)
	if err != nil {
		panic(err)
	}
	return p
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s) // the regexps admit digits only
	return n
}

func compareMinor(a, b [2]int) int {
	if a[0] != b[0] {
		return a[0] - b[0]
	}
	return a[1] - b[1]
}

// pythonRange is pyMin-pyMax for messages, e.g. "CPython 3.11-3.13".
func (p pinSet) pythonRange() string {
	return fmt.Sprintf("CPython %d.%d-%d.%d", p.pyMin[0], p.pyMin[1], p.pyMax[0], p.pyMax[1])
}

// supports reports whether the pinned wheels exist for CPython version
// ("3.11.7").
func (p pinSet) supports(version string) bool {
	parts := strings.SplitN(version, ".", 3)
	if len(parts) < 2 {
		return false
	}
	major, err1 := strconv.Atoi(parts[0])
	minor, err2 := strconv.Atoi(parts[1])
	if err1 != nil || err2 != nil {
		return false
	}
	v := [2]int{major, minor}
	return compareMinor(v, p.pyMin) >= 0 && compareMinor(v, p.pyMax) <= 0
}

// runtimeKey names a runtime's directory after everything that makes one
// runtime differ from another: the pinned set and the interpreter (its full
// version string, which includes the build, and its prefix, which the venv
// links to). The readable part is for people listing the cache.
func runtimeKey(p pinSet, py pythonInfo) string {
	h := sha256.New()
	h.Write(p.raw)
	fmt.Fprintf(h, "\x00%s\x00%s", py.SysVersion, py.BasePrefix)
	name := "paddle-" + p.paddle
	if p.env != "" {
		name = p.env
	}
	return fmt.Sprintf("%s-py%s-%s", name, py.Version, hex.EncodeToString(h.Sum(nil))[:12])
}

// label names the environment in messages.
func (p pinSet) label() string {
	if p.env == "" {
		return "the Paddle runtime"
	}
	return "the Python environment " + p.env
}

// packages names what the set pins, in messages.
func (p pinSet) packages() string {
	if p.env == "" {
		return "paddlepaddle " + p.paddle + " and its pinned dependencies"
	}
	return "the packages " + p.env + " pins"
}

// plural names environments of this kind, in messages.
func (p pinSet) plural() string {
	if p.env == "" {
		return "Paddle runtimes"
	}
	return p.env + " environments"
}

// dirName is the environment's directory in the cache.
func (p pinSet) dirName() string {
	if p.env == "" {
		return "paddle-runtime"
	}
	return p.env
}
