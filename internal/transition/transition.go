// Package transition is the operator's event for a transition of one of a
// PaddleJob's conditions: the status keeps only each condition's latest
// transition, its events keep them all, and the dashboard draws the job's
// timeline (and its suspensions on the curves) from them. The operator
// writes the note and the dashboard reads it, so both live here.
package transition

import (
	"fmt"
	"regexp"
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Reason is the reason of the event of a condition's transition.
const Reason = "ConditionChanged"

// Action is the event's action. The event recorder merges the events of an
// object with the same type, reason and action into one series (their
// notes are not compared), keeping the first one's note: each transition's
// action is its own (the condition, its status and reason, the generation
// and restart count), so no transition hides another.
func Action(c metav1.Condition, generation int64, restarts int32) string {
	a := fmt.Sprintf("Set%s%s.%s.generation%d.restart%d", c.Type, c.Status, c.Reason, generation, restarts)
	if len(a) > maxAction {
		a = a[:maxAction]
	}
	return a
}

// maxAction is the API's limit on an event's action.
const maxAction = 128

// Note is the event's note:
//
//	Suspended=True at generation 3, restart 0 (Suspended): spec.suspend is set: ...
func Note(c metav1.Condition, generation int64, restarts int32) string {
	return fmt.Sprintf("%s=%s at generation %d, restart %d (%s): %s", c.Type, c.Status, generation, restarts, c.Reason, c.Message)
}

var noteRE = regexp.MustCompile(`(?s)^(\w+)=(True|False|Unknown) at generation (\d+), restart (\d+) \(([^)]*)\): (.*)$`)

// Parsed is what a Note says.
type Parsed struct {
	Type, Status, Reason, Message string
	Generation                    int64
	Restarts                      int32
}

// Parse reads a Note; false when note is none.
func Parse(note string) (Parsed, bool) {
	m := noteRE.FindStringSubmatch(note)
	if m == nil {
		return Parsed{}, false
	}
	gen, err := strconv.ParseInt(m[3], 10, 64)
	if err != nil {
		return Parsed{}, false
	}
	restarts, err := strconv.ParseInt(m[4], 10, 32)
	if err != nil {
		return Parsed{}, false
	}
	return Parsed{Type: m[1], Status: m[2], Reason: m[5], Message: m[6], Generation: gen, Restarts: int32(restarts)}, true
}
