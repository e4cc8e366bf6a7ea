package podcontract

import (
	"slices"
	"testing"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/internal/testutil"
)

// A pod's contract in one value: who serves, who waits for what, who holds
// the Gloo store, and the environment with the job variables read from the
// endpoints ConfigMap.
func TestForPod(t *testing.T) {
	ps := []paddlev1.ReplicaType{paddlev1.ReplicaPS}
	for _, tc := range []struct {
		name  string
		job   *paddlev1.PaddleJob
		rt    paddlev1.ReplicaType
		index int
		want  Pod // Env is checked apart
	}{
		{name: "ps-0 of a Gloo job", job: testutil.MakePaddleJob("j", "ns").PS(2).Workers(2).WithGloo(1).Obj(),
			rt: paddlev1.ReplicaPS, want: Pod{Server: true, GlooStore: true, WaitsForEndpoints: true}},
		{name: "ps-1 of a Gloo job", job: testutil.MakePaddleJob("j", "ns").PS(2).Workers(2).WithGloo(1).Obj(),
			rt: paddlev1.ReplicaPS, index: 1, want: Pod{Server: true, WaitsForEndpoints: true}},
		{name: "a worker of a parameter-server job", job: testutil.MakePaddleJob("j", "ns").PS(2).Workers(2).Obj(),
			rt: paddlev1.ReplicaWorker, want: Pod{WaitsForEndpoints: true, WaitsForServers: ps}},
		{name: "a worker in Service intranet", job: testutil.MakePaddleJob("j", "ns").PS(1).Workers(2).Intranet(paddlev1.IntranetService).Obj(),
			rt: paddlev1.ReplicaWorker, want: Pod{WaitsForServers: ps}},
		{name: "a collective worker in Service intranet", job: testutil.MakePaddleJob("j", "ns").Workers(2).Intranet(paddlev1.IntranetService).Obj(),
			rt: paddlev1.ReplicaWorker, want: Pod{}},
		{name: "a collective worker in Host intranet", job: testutil.MakePaddleJob("j", "ns").Workers(2).Intranet(paddlev1.IntranetHost).Obj(),
			rt: paddlev1.ReplicaWorker, want: Pod{HostNetwork: true, WaitsForEndpoints: true}},
		{name: "a heter trainer", job: testutil.MakePaddleJob("j", "ns").PS(1).Workers(1).Heter(1).Obj(),
			rt: paddlev1.ReplicaHeter, want: Pod{Server: true, WaitsForEndpoints: true, WaitsForServers: ps}},
		{name: "a worker on the file-system rendezvous", job: testutil.MakePaddleJob("j", "ns").PS(1).Workers(2).WithGloo(2).
			Env(paddlev1.ReplicaPS, GlooFSPath, "/shared/gloo").Env(paddlev1.ReplicaWorker, GlooFSPath, "/shared/gloo").Obj(),
			rt: paddlev1.ReplicaWorker, want: Pod{GlooFiles: true, WaitsForEndpoints: true, WaitsForServers: ps}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ports := DefaultPortRange(tc.job.Spec.Replicas(tc.rt))
			got := ForPod(tc.job, tc.rt, tc.index, ports, PodEnvOptions{})
			env := got.Env
			got.Env = nil
			if got.HostNetwork != tc.want.HostNetwork || got.Server != tc.want.Server || got.GlooStore != tc.want.GlooStore ||
				got.GlooFiles != tc.want.GlooFiles || got.WaitsForEndpoints != tc.want.WaitsForEndpoints ||
				!slices.Equal(got.WaitsForServers, tc.want.WaitsForServers) {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
			if got.Waits() != (tc.want.WaitsForEndpoints || len(tc.want.WaitsForServers) > 0) || got.Waits() != PodWaits(&tc.job.Spec, tc.rt) {
				t.Errorf("Waits() %v, PodWaits %v", got.Waits(), PodWaits(&tc.job.Spec, tc.rt))
			}
			// The pod variables literally, then each job variable from the ConfigMap.
			names := JobEnvNames(&tc.job.Spec, tc.rt)
			pod := PodEnv(tc.job, tc.rt, tc.index, ports, PodEnvOptions{})
			if len(env) != len(pod)+len(names) {
				t.Fatalf("%d variables, want %d pod and %d job variables", len(env), len(pod), len(names))
			}
			for i, n := range names {
				e := env[len(pod)+i]
				ref := e.ValueFrom
				if e.Name != n || ref == nil || ref.ConfigMapKeyRef == nil || ref.ConfigMapKeyRef.Name != "j-endpoints" ||
					ref.ConfigMapKeyRef.Key != n || ref.ConfigMapKeyRef.Optional == nil || !*ref.ConfigMapKeyRef.Optional {
					t.Errorf("variable %d is %+v, want %s from ConfigMap j-endpoints, optional", len(pod)+i, e, n)
				}
			}
		})
	}
}
