package validation_test

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/internal/operator/podcontract"
	"github.com/paddlejob/paddlejob/internal/operator/validation"
)

// The tests run the checks as the operator does: against the pod contract
// its pods are built from (podcontract), under the settings of an operator
// started with its defaults: Volcano as the gang scheduler, no elastic etcd,
// no progress reports.
func validator(configure ...func(*validation.Settings)) *validation.Validator {
	s := validation.Settings{Gang: podcontract.GangSettings{Default: podcontract.GangVolcano, SchedulerPluginsName: podcontract.DefaultSchedulerPluginsName}}
	for _, c := range configure {
		c(&s)
	}
	return &validation.Validator{Settings: s}
}

// wantFieldErrors fails the test unless errs mention every one of want, or,
// with no want, unless errs is empty.
func wantFieldErrors(t *testing.T, errs field.ErrorList, want ...string) {
	t.Helper()
	if len(want) == 0 {
		if len(errs) > 0 {
			t.Fatalf("want no error, got %v", errs)
		}
		return
	}
	if len(errs) == 0 {
		t.Fatalf("want an error naming %q, got none", want)
	}
	msg := errs.ToAggregate().Error()
	for _, w := range want {
		if !strings.Contains(msg, w) {
			t.Errorf("error %q does not mention %q", msg, w)
		}
	}
}

func validate(t *testing.T, job *paddlev1.PaddleJob, want ...string) {
	t.Helper()
	wantFieldErrors(t, validator().Validate(job), want...)
}
