package webhook

import (
	"context"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/internal/testutil"
)

// A parameter-server job whose worker list cannot reach Paddle's launcher —
// longer, at the longest IPv4 addresses, than the kernel's limit for one
// environment string — is refused, naming the field, the variable and the
// limit; one worker fewer than the limit allows is accepted.
func TestRefusesWorkerListsOverTheKernelLimit(t *testing.T) {
	ns := newNamespace(t)
	job := testutil.MakePaddleJob("wide", ns).PS(2).Workers(5957).Obj()
	err := k8s.Create(context.Background(), job)
	for _, want := range []string{"spec.worker.replicas: Invalid value: 5957", "PADDLE_TRAINERS_ENDPOINTS would be up to 131080 bytes", "the kernel's limit of 131072 bytes", "Paddle's launcher in parameter-server mode reads it only from its environment", "at most 5956 worker pods fit"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v\nwant %q", err, want)
		}
	}
	if err := k8s.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: job.Name}, &paddlev1.PaddleJob{}); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Errorf("the job was stored: %v", err)
	}
	// A dry run: admitted, and no controller makes its 5958 pods.
	fits := testutil.MakePaddleJob("fits", ns).PS(2).Workers(5956).Obj()
	if err := k8s.Create(context.Background(), fits, client.DryRunAll); err != nil {
		t.Errorf("5956 workers: %v", err)
	}
}

// A heter pod under Paddle's launcher, which cannot start it, is accepted
// with a warning that names the fix; a Host-intranet PS job under the
// launcher is accepted without one (its pods are addressed by name).
func TestWarnsWhereThePSLauncherCannotRun(t *testing.T) {
	ns := newNamespace(t)
	launch := []string{"python3", "-m", "paddle.distributed.launch", "train.py"}
	host := testutil.MakePaddleJob("host", ns).PS(1).Workers(2).Intranet(paddlev1.IntranetHost).
		Command(paddlev1.ReplicaPS, launch...).Command(paddlev1.ReplicaWorker, launch...).Obj()
	heter := testutil.MakePaddleJob("heter", ns).PS(1).Workers(2).Heter(1).Command(paddlev1.ReplicaHeter, launch...).Obj()
	for _, tc := range []struct {
		job  *paddlev1.PaddleJob
		want string // "": no warning
	}{
		{host, ""},
		{heter, "spec.heter.template runs paddle.distributed.launch, which cannot start a heter trainer"},
	} {
		warnings.take()
		if err := k8s.Create(context.Background(), tc.job); err != nil {
			t.Fatalf("%s: %v", tc.job.Name, err)
		}
		if got := strings.Join(warnings.take(), "\n"); (tc.want == "" && got != "") || !strings.Contains(got, tc.want) {
			t.Errorf("%s: warnings %q\nwant %q", tc.job.Name, got, tc.want)
		}
	}
}
