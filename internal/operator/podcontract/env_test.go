package podcontract

import (
	"strings"
	"testing"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/internal/testutil"
)

// The worker lists are in the environment exactly up to the kernel's limit,
// NAME=value and its NUL, for a collective job outside Host intranet; a
// parameter-server job's always are (validation refuses one that does
// not fit); an elastic job's never.
func TestWorkerListsInEnv(t *testing.T) {
	// fits is the longest value of PADDLE_TRAINER_ENDPOINTS that still fits.
	fits := strings.Repeat("x", MaxEnvStringBytes-len("PADDLE_TRAINER_ENDPOINTS=")-1)
	tests := []struct {
		name string
		job  *paddlev1.PaddleJob
		list string
		want bool
	}{
		{"collective, at the limit", testutil.MakePaddleJob("a", "").Workers(2).Obj(), fits, true},
		{"collective, one byte over", testutil.MakePaddleJob("a", "").Workers(2).Obj(), fits + "x", false},
		{"collective, Service intranet", testutil.MakePaddleJob("a", "").Workers(2).Intranet(paddlev1.IntranetService).Obj(), "a:1,b:1", true},
		{"parameter server, over the limit: refused at admission instead", testutil.MakePaddleJob("a", "").PS(1).Workers(2).Obj(), fits + "x", true},
		{"Host intranet, parameter server: the PS launcher needs them and never uses its master", testutil.MakePaddleJob("a", "").PS(1).Workers(2).Intranet(paddlev1.IntranetHost).Obj(), "a:1,b:1", true},
		{"Host intranet, collective", testutil.MakePaddleJob("a", "").Workers(2).Intranet(paddlev1.IntranetHost).Obj(), "a:1,b:1", false},
		{"elastic", testutil.MakePaddleJob("a", "").Workers(2).Elastic(1, 3, "http://etcd:2379").Obj(), "a:1,b:1", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := WorkerListsInEnv(&tc.job.Spec, tc.list); got != tc.want {
				t.Errorf("WorkerListsInEnv = %v, want %v", got, tc.want)
			}
		})
	}
}
