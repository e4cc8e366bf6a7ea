// Package paddlefailure explains why a PaddlePaddle container failed.
//
// The kubelet reports a container's end in its terminated state: the exit
// code, a reason (Error, OOMKilled) and, under terminationMessagePolicy
// FallbackToLogsOnError, the last lines of its log (80 lines, 2048 bytes at
// most). Explain matches that state, and the pod's spec where the answer
// depends on it (the job's mode, the volume that holds a path, the node),
// against a table of known failures, signatures.yaml, and returns at most
// one Explanation: the cause in plain words and the fix.
//
// The table is data: each signature has an id, what it matches, the cause,
// the fix, the Paddle releases it was seen on and its section of
// docs/paddle-known-issues.md, whose table `go run ./hack/failuredocs`
// writes from it. The package is pure: no I/O, no clock.
package paddlefailure

import (
	_ "embed"
	"fmt"
	"regexp"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
)

// DocPath is the page every signature's doc anchor is a heading of.
const DocPath = "docs/paddle-known-issues.md"

// Explanation is what a known failure means.
type Explanation struct {
	// ID names the signature (signatures.yaml).
	ID string `json:"id"`
	// Cause says why the container failed, in plain words, naming what
	// the log and the pod showed (a module, a path and its volume).
	Cause string `json:"cause"`
	// Fix says what to change.
	Fix string `json:"fix"`
	// Doc is where the failure is described: DocPath#anchor.
	Doc string `json:"doc"`
}

// Signature is one known failure of the table.
type Signature struct {
	ID    string `json:"id"`
	Title string `json:"title"`
	// Match holds the alternatives: the signature matches when one of
	// them does.
	Match []Match `json:"match"`
	// Context names what Go reads from the pod to complete the text: the
	// case it picks among Cases and the variables it adds (context.go).
	Context string `json:"context,omitempty"`
	Cause   string `json:"cause"`
	Fix     string `json:"fix"`
	// Cases refine the cause or the fix for what the context found.
	Cases map[string]Text `json:"cases,omitempty"`
	// Releases are the Paddle releases it was seen on ("any" when it is
	// no matter of Paddle's).
	Releases []string `json:"releases"`
	// Doc is the anchor of its section in DocPath, the heading Title
	// makes.
	Doc string `json:"doc"`
	// Notes is more for its section of the docs (Markdown): how it shows,
	// how it was measured.
	Notes string `json:"notes,omitempty"`
}

// Text is a case's cause and fix; either, empty, is the signature's own.
type Text struct {
	// When says in a few words when the case applies, for the docs.
	When  string `json:"when"`
	Cause string `json:"cause,omitempty"`
	Fix   string `json:"fix,omitempty"`
}

// Match is one alternative: every condition it sets must hold.
type Match struct {
	// Log are regular expressions that must all match the termination
	// message; their named groups are variables of the text ({module}).
	Log []string `json:"log,omitempty"`
	// ExitCode, when set, is the exit code.
	ExitCode *int32 `json:"exitCode,omitempty"`
	// Reason, when set, is the terminated state's reason (OOMKilled).
	Reason string `json:"reason,omitempty"`
	// Mode, when set, is the mode of the pod's job: ps or collective.
	Mode string `json:"mode,omitempty"`

	log []*regexp.Regexp
}

// Modes of a pod's job, as Mode reads them from the pod.
const (
	ModePS         = "ps"
	ModeCollective = "collective"
)

//go:embed signatures.yaml
var tableYAML []byte

// table is the parsed signatures.yaml; Signatures returns a copy.
var table = mustLoad(tableYAML)

// Signatures returns the table, in its order (the order Explain tries it in).
func Signatures() []Signature { return slices.Clone(table) }

func mustLoad(data []byte) []Signature {
	sigs, err := load(data)
	if err != nil {
		panic("paddlefailure: signatures.yaml: " + err.Error())
	}
	return sigs
}

// load parses and checks a table.
func load(data []byte) ([]Signature, error) {
	var file struct {
		Signatures []Signature `json:"signatures"`
	}
	if err := yaml.UnmarshalStrict(data, &file); err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	for i := range file.Signatures {
		s := &file.Signatures[i]
		if err := s.check(); err != nil {
			return nil, fmt.Errorf("signature %d (%q): %w", i, s.ID, err)
		}
		if seen[s.ID] {
			return nil, fmt.Errorf("signature %q is there twice", s.ID)
		}
		seen[s.ID] = true
	}
	return file.Signatures, nil
}

var (
	idPattern     = regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`)
	anchorPattern = regexp.MustCompile(`^[a-z0-9_-]+$`)
)

// check compiles a signature's expressions and checks its fields.
func (s *Signature) check() error {
	switch {
	case !idPattern.MatchString(s.ID):
		return fmt.Errorf("id %q is not lower-case words joined by '-'", s.ID)
	case s.Title == "" || s.Cause == "" || s.Fix == "" || len(s.Releases) == 0:
		return fmt.Errorf("title, cause, fix and releases are required")
	case !anchorPattern.MatchString(s.Doc):
		return fmt.Errorf("doc %q is not a heading's anchor", s.Doc)
	case len(s.Match) == 0:
		return fmt.Errorf("no match")
	}
	if _, ok := contexts[s.Context]; !ok {
		return fmt.Errorf("unknown context %q", s.Context)
	}
	texts := []string{s.Cause, s.Fix}
	for name, c := range s.Cases {
		if !slices.Contains(contexts[s.Context].cases, name) {
			return fmt.Errorf("case %q is not one context %q picks (%v)", name, s.Context, contexts[s.Context].cases)
		}
		if c.When == "" || (c.Cause == "" && c.Fix == "") {
			return fmt.Errorf("case %q: when, and a cause or a fix, are required", name)
		}
		texts = append(texts, c.Cause, c.Fix)
	}
	for _, t := range texts {
		if Defuse(t) != t {
			return fmt.Errorf("a cause or fix holds what ends an explanation in a message (%q or %q): %q", "Known failure [", "Fix:", t)
		}
	}
	for i := range s.Match {
		m := &s.Match[i]
		if len(m.Log) == 0 && m.ExitCode == nil && m.Reason == "" {
			return fmt.Errorf("match %d: neither log, exitCode nor reason", i)
		}
		if m.Mode != "" && m.Mode != ModePS && m.Mode != ModeCollective {
			return fmt.Errorf("match %d: mode %q is neither %s nor %s", i, m.Mode, ModePS, ModeCollective)
		}
		m.log = nil
		for _, expr := range m.Log {
			re, err := regexp.Compile(expr)
			if err != nil {
				return fmt.Errorf("match %d: %w", i, err)
			}
			m.log = append(m.log, re)
		}
	}
	return nil
}

// Explain returns what a container's failure means, or nil when no known
// failure matches. pod (nil when unknown) is the pod it ran in: its spec
// says the job's mode, the container's mounts and memory limit, the node.
func Explain(pod *corev1.Pod, container string, t *corev1.ContainerStateTerminated) *Explanation {
	if t == nil || (t.ExitCode == 0 && t.Reason != "OOMKilled") {
		return nil
	}
	in := input{pod: pod, containerName: container, container: findContainer(pod, container), state: t, mode: Mode(pod)}
	for i := range table {
		if vars, ok := table[i].matches(in); ok {
			return table[i].explain(in, vars)
		}
	}
	return nil
}

// input is what a signature is matched against.
type input struct {
	pod           *corev1.Pod
	containerName string
	// container is the container's spec, nil when the pod is unknown.
	container *corev1.Container
	state     *corev1.ContainerStateTerminated
	mode      string
}

// matches reports whether one alternative matches, with the variables its
// expressions' named groups captured.
func (s *Signature) matches(in input) (map[string]string, bool) {
	for _, m := range s.Match {
		if vars, ok := m.matches(in); ok {
			return vars, true
		}
	}
	return nil, false
}

func (m *Match) matches(in input) (map[string]string, bool) {
	if m.ExitCode != nil && in.state.ExitCode != *m.ExitCode {
		return nil, false
	}
	if m.Reason != "" && in.state.Reason != m.Reason {
		return nil, false
	}
	if m.Mode != "" && in.mode != m.Mode {
		return nil, false
	}
	if len(m.log) == 0 && in.pod != nil && in.pod.Status.Reason != "" {
		// An exit code or reason alone says nothing when the pod has a
		// reason of its own (Evicted, NodeRestarted): that reason stopped
		// the container.
		return nil, false
	}
	vars := map[string]string{}
	for _, re := range m.log {
		// The last match: the end of the log is what failed.
		all := re.FindAllStringSubmatch(in.state.Message, -1)
		if all == nil {
			return nil, false
		}
		last := all[len(all)-1]
		for i, name := range re.SubexpNames() {
			if name != "" && last[i] != "" {
				vars[name] = last[i]
			}
		}
	}
	return vars, true
}

// explain completes the signature's text for the input.
func (s *Signature) explain(in input, vars map[string]string) *Explanation {
	ctx := contexts[s.Context].resolve(in, vars)
	cause, fix := s.Cause, s.Fix
	if c, ok := s.Cases[ctx.name]; ok {
		if c.Cause != "" {
			cause = c.Cause
		}
		if c.Fix != "" {
			fix = c.Fix
		}
	}
	for k, v := range ctx.vars {
		vars[k] = v
	}
	vars["container"] = in.containerName
	return &Explanation{ID: s.ID, Cause: expand(cause, vars), Fix: expand(fix, vars), Doc: DocPath + "#" + s.Doc}
}

// maxVar bounds a variable taken from a log or a spec, so that an
// explanation stays short enough for an event's note.
const maxVar = 120

// placeholder is a variable of a text: {name}.
var placeholder = regexp.MustCompile(`\{([a-zA-Z]+)\}`)

// expand replaces each {name} of a text by the variable's value, made one
// line, bounded and stripped of the words Parse looks for; a variable
// nobody set is left as it is written.
func expand(text string, vars map[string]string) string {
	text = strings.Join(strings.Fields(text), " ")
	return placeholder.ReplaceAllStringFunc(text, func(p string) string {
		v, ok := vars[p[1:len(p)-1]]
		if !ok {
			return p
		}
		return safeVar(v)
	})
}

// safeVar makes a value one line of at most maxVar bytes that cannot end a
// cause or start a fix in a message (Parse).
func safeVar(v string) string {
	v = Defuse(strings.Join(strings.Fields(v), " "))
	if len(v) > maxVar {
		cut := maxVar - len("...")
		for cut > 0 && (v[cut]&0xC0) == 0x80 {
			cut--
		}
		v = v[:cut] + "..."
	}
	return v
}

// findContainer is the pod's container (or init container) of that name.
func findContainer(pod *corev1.Pod, name string) *corev1.Container {
	if pod == nil {
		return nil
	}
	for _, cs := range [][]corev1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
		for i := range cs {
			if cs[i].Name == name {
				return &cs[i]
			}
		}
	}
	return nil
}

// Mode is the mode of a PaddleJob pod's job: ModePS when its containers
// have the parameter servers' list (the operator gives it to every pod of
// a job with spec.ps), ModeCollective for another pod of a PaddleJob, ""
// for a pod of no PaddleJob.
func Mode(pod *corev1.Pod) string {
	if pod == nil {
		return ""
	}
	for _, c := range pod.Spec.Containers {
		for _, e := range c.Env {
			if e.Name == "PADDLE_PSERVERS_IP_PORT_LIST" {
				return ModePS
			}
		}
	}
	if pod.Labels[paddlev1.LabelJobName] != "" {
		return ModeCollective
	}
	return ""
}
