package controller

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/internal/testutil"
)

func TestElasticPass(t *testing.T) {
	elastic := func(workers int32, endpoints ...string) *paddlev1.PaddleJob {
		return testutil.MakePaddleJob("el", "ns").UID("el-uid").Workers(workers).Intranet(paddlev1.IntranetService).
			Elastic(1, 3, endpoints...).Obj()
	}
	envOf := func(p *corev1.Pod, name string) string {
		for _, e := range p.Spec.Containers[0].Env {
			if e.Name == name {
				return e.Value
			}
		}
		return ""
	}
	masterIs := func(master string) func(*testing.T, passResult) {
		return func(t *testing.T, got passResult) {
			for _, p := range got.pods {
				if envOf(p, envMaster) != master || envOf(p, envNNodes) != "1:3" || p.Spec.RestartPolicy != corev1.RestartPolicyOnFailure {
					t.Errorf("pod %s: PADDLE_MASTER %q, PADDLE_NNODES %q, restartPolicy %s; want %s, 1:3, OnFailure",
						p.Name, envOf(p, envMaster), envOf(p, envNNodes), p.Spec.RestartPolicy, master)
				}
			}
		}
	}
	tests := []struct {
		name  string
		job   *paddlev1.PaddleJob
		opts  Options
		pods  func(*paddlev1.PaddleJob) []*corev1.Pod
		want  passWant
		check func(*testing.T, passResult)
	}{
		{
			name:  "the workers rendezvous in the job's etcd between its bounds",
			job:   elastic(2, "http://etcd.ns:2379"),
			want:  passWant{created: []string{"el-worker-0", "el-worker-1"}, requeue: expectationTimeout},
			check: masterIs("etcd://etcd.ns:2379"),
		},
		{
			name:  "a job naming no etcd uses the operator's",
			job:   elastic(2),
			opts:  Options{ElasticEtcdEndpoints: []string{"http://operator-etcd:2379"}},
			want:  passWant{created: []string{"el-worker-0", "el-worker-1"}, requeue: expectationTimeout},
			check: masterIs("etcd://operator-etcd:2379"),
		},
		{
			name: "scaling down deletes the workers beyond the replicas",
			job:  elastic(1, "http://etcd.ns:2379"),
			pods: func(j *paddlev1.PaddleJob) []*corev1.Pod {
				return []*corev1.Pod{
					testutil.MakePod(j, paddlev1.ReplicaWorker, 0).Scheduled("n").Running("10.0.0.1").Annotation(paddlev1.AnnotationPorts, "23000-23002").Obj(),
					testutil.MakePod(j, paddlev1.ReplicaWorker, 1).Scheduled("n").Running("10.0.0.2").Annotation(paddlev1.AnnotationPorts, "23000-23002").Obj(),
				}
			},
			want: passWant{deleted: []string{"el-worker-1"}, phase: paddlev1.PaddleJobRunning},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var pods []*corev1.Pod
			if tc.pods != nil {
				pods = tc.pods(tc.job)
			}
			f := newFixture(t, tc.opts, objects(tc.job, pods...)...)
			got := f.reconcile(t, tc.job)
			tc.want.check(t, got)
			if tc.check != nil {
				tc.check(t, got)
			}
		})
	}
}
