package transition

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// What the operator writes the dashboard reads back, a message of several
// lines included; other notes are none.
func TestANoteReadsBack(t *testing.T) {
	c := metav1.Condition{Type: "Suspended", Status: metav1.ConditionTrue, Reason: "Suspended", Message: "spec.suspend is set:\nthe pods are deleted"}
	note := Note(c, 3, 1)
	if want := "Suspended=True at generation 3, restart 1 (Suspended): spec.suspend is set:\nthe pods are deleted"; note != want {
		t.Fatalf("note %q, want %q", note, want)
	}
	got, ok := Parse(note)
	want := Parsed{Type: "Suspended", Status: "True", Reason: "Suspended", Message: c.Message, Generation: 3, Restarts: 1}
	if !ok || got != want {
		t.Errorf("Parse: %+v %v, want %+v", got, ok, want)
	}
	for _, other := range []string{"", "Created 2 pods: a, b", "Suspended=Maybe at generation 1, restart 0 (X): y"} {
		if p, ok := Parse(other); ok {
			t.Errorf("Parse(%q) = %+v, want none", other, p)
		}
	}
}

// The event recorder merges events of the same type, reason and action:
// two transitions never share an action, one repeated does.
func TestEachTransitionHasItsOwnAction(t *testing.T) {
	suspended := metav1.Condition{Type: "Running", Status: metav1.ConditionFalse, Reason: "Suspended"}
	waiting := metav1.Condition{Type: "Running", Status: metav1.ConditionFalse, Reason: "WaitingForPodIPs"}
	if Action(suspended, 3, 0) == Action(waiting, 3, 0) || Action(suspended, 3, 0) == Action(suspended, 4, 0) || Action(suspended, 3, 0) == Action(suspended, 3, 1) {
		t.Errorf("two transitions share an action: %s, %s", Action(suspended, 3, 0), Action(waiting, 3, 0))
	}
	if a := Action(metav1.Condition{Type: "Running", Reason: string(make([]byte, 300))}, 1, 0); len(a) > 128 {
		t.Errorf("action of %d bytes, over the API's 128", len(a))
	}
}
