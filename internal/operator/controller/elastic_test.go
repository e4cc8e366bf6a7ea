package controller

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/internal/operator/podcontract"
	"github.com/paddlejob/paddlejob/internal/testutil"
)

func TestElasticPass(t *testing.T) {
	elastic := func(workers int32, endpoints ...string) *paddlev1.PaddleJob {
		return testutil.MakePaddleJob("el", "ns").UID("el-uid").Workers(workers).Intranet(paddlev1.IntranetService).
			Elastic(1, 3, endpoints...).Obj()
	}
	envOf := func(p *corev1.Pod, name string) (string, bool) {
		for _, e := range p.Spec.Containers[0].Env {
			if e.Name == name {
				return e.Value, true
			}
		}
		return "", false
	}
	masterIs := func(master string) func(*testing.T, passResult) {
		return func(t *testing.T, got passResult) {
			for _, p := range got.pods {
				m, _ := envOf(p, podcontract.EnvMaster)
				n, _ := envOf(p, podcontract.EnvNNodes)
				if m != master || n != "1:3" || p.Spec.RestartPolicy != corev1.RestartPolicyOnFailure {
					t.Errorf("pod %s: PADDLE_MASTER %q, PADDLE_NNODES %q, restartPolicy %s; want %s, 1:3, OnFailure",
						p.Name, m, n, p.Spec.RestartPolicy, master)
				}
				if id, _ := envOf(p, "PADDLE_JOB_ID"); id != "ns_el_el-uid" {
					t.Errorf("pod %s: PADDLE_JOB_ID %q, want ns_el_el-uid", p.Name, id)
				}
				// Paddle's launcher ranks the live workers itself.
				for _, name := range []string{"PADDLE_TRAINER_ID", "TRAINER_ID", "PADDLE_RANK"} {
					if v, ok := envOf(p, name); ok {
						t.Errorf("pod %s: %s=%q fixes its rank", p.Name, name, v)
					}
				}
			}
		}
	}
	runPassCases(t, []passCase{
		{
			name:  "the workers rendezvous in the job's etcd between its bounds",
			job:   elastic(2, "http://etcd.ns:2379"),
			want:  passWant{created: []string{"el-worker-0", "el-worker-1"}, requeue: expectationTimeout},
			check: masterIs("etcd://Etcd.ns:2379"),
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
	})
}
