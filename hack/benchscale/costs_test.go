package main

import (
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"
)

func TestCostLabelIsAValidKeyOfTheSameSize(t *testing.T) {
	for _, key := range []string{"batch.paddlepaddle.org/job-name", "app", "volcano.sh/job-name"} {
		got := costLabel(key)
		if errs := validation.IsQualifiedName(got); len(errs) > 0 {
			t.Errorf("costLabel(%q) = %q: %v", key, got, errs)
		}
		if got == key || len(got) != len(key)+len("costs.") {
			t.Errorf("costLabel(%q) = %q: want the key renamed, %d bytes longer", key, got, len("costs."))
		}
	}
}
