package kueue

import (
	"testing"

	kueueapi "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	kueuecontrollerconstants "sigs.k8s.io/kueue/pkg/controller/constants"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
)

// api/v1 spells Kueue's names users write in their YAML as literals, so the
// API types (and the SDKs built on them) need no Kueue module; they must
// stay Kueue's own.
func TestTheAPINamesAreKueues(t *testing.T) {
	for _, c := range []struct{ ours, kueues string }{
		{paddlev1.KueueQueueNameLabel, kueuecontrollerconstants.QueueLabel},
		{paddlev1.KueuePriorityClassLabel, kueuecontrollerconstants.WorkloadPriorityClassLabel},
		{paddlev1.ManagedByMultiKueue, kueueapi.MultiKueueControllerName},
	} {
		if c.ours != c.kueues {
			t.Errorf("api/v1 says %q where Kueue says %q", c.ours, c.kueues)
		}
	}
}
