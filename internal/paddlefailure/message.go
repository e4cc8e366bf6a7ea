package paddlefailure

import (
	"regexp"
	"strings"
)

// exceptionLine is a line that names a Python exception (Paddle's errors
// are ones): "ValueError: (InvalidArgument) ...", "AssertionError".
var exceptionLine = regexp.MustCompile(`^(?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*(?:Error|Exception|Exit|Interrupt)(?::\s.*)?$`)

// KeyLine is the line of a termination message that says what failed, ""
// for an empty message: a message of one line as it is, else the last line
// naming a Python exception, else the last line; trimmed.
func KeyLine(message string) string {
	lines := strings.Split(strings.TrimSpace(message), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if l := strings.TrimSpace(lines[i]); exceptionLine.MatchString(l) {
			return l
		}
	}
	for i := len(lines) - 1; i >= 0; i-- {
		if l := strings.TrimSpace(lines[i]); l != "" {
			return l
		}
	}
	return ""
}

// An explanation travels in the messages people and programs read (a
// PaddleJob's Failed and Restarting conditions, the operator's events) as
// one sentence String writes and Parse finds again, also after text
// before and after it:
//
//	Known failure [missing-module]: <cause> Fix: <fix> See docs/paddle-known-issues.md#<anchor>
//
// The SDKs parse it the same way (python/src/paddlejob/objects.py, with the
// shared cases of test/vectors/failures).
const (
	knownWord = "Known failure ["
	fixWord   = " Fix: "
	seeWord   = " See "
)

// String is the explanation as one sentence of a message.
func (e *Explanation) String() string {
	return knownWord + e.ID + "]: " + e.Cause + fixWord + e.Fix + seeWord + e.Doc
}

// sentence matches what String writes: the cause runs to the last " Fix: "
// before the reference, which no cause, fix or variable holds (Defuse).
var sentence = regexp.MustCompile(`Known failure \[([a-z0-9]+(?:-[a-z0-9]+)*)\]: (.+) Fix: (.+?) See (docs/[A-Za-z0-9._/-]+#[a-z0-9_-]+)`)

// Parse finds the explanation String wrote in a message; nil when there is none.
func Parse(msg string) *Explanation {
	m := sentence.FindStringSubmatch(msg)
	if m == nil {
		return nil
	}
	return &Explanation{ID: m[1], Cause: m[2], Fix: m[3], Doc: m[4]}
}

// Defuse changes text that goes into a message beside an explanation (a
// line of a log, a value in the explanation itself) so that Parse cannot
// mistake it for the start of an explanation or of its fix.
func Defuse(s string) string {
	s = strings.ReplaceAll(s, "Known failure [", "known failure [")
	return strings.ReplaceAll(s, "Fix:", "fix:")
}
