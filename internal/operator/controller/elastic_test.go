package controller

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
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
				m, _ := envOf(p, envMaster)
				n, _ := envOf(p, envNNodes)
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

// Paddle's launcher clears the etcd keys under /paddle/<PADDLE_JOB_ID>, a
// key prefix, whenever one of its pods starts: no job's id may be a prefix
// of another's, nor equal to it.
func TestElasticJobIDsArePrefixFree(t *testing.T) {
	const uid1, uid2 = "6f1d2c3a-9b8e-4f7a-8c1d-2e3f4a5b6c7d", "0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"
	jobs := []*paddlev1.PaddleJob{
		// "<namespace>-<name>" would be "a-b-c" for both. They share a
		// UID here so that their ids must differ by namespace and name
		// alone (issue 21: colliding namespace-name strings).
		testutil.MakePaddleJob("c", "a-b").UID(uid1).Obj(),
		testutil.MakePaddleJob("b-c", "a").UID(uid1).Obj(),
		// "ns-el" would be a prefix of "ns-el2" and of "ns-el-2".
		testutil.MakePaddleJob("el", "ns").UID(uid1).Obj(),
		testutil.MakePaddleJob("el2", "ns").UID(uid2).Obj(),
		testutil.MakePaddleJob("el-2", "ns").UID("1a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d").Obj(),
		// A job deleted and created again under its name.
		testutil.MakePaddleJob("el", "ns").UID("2a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d").Obj(),
		// Object names may hold dots; namespaces may not.
		testutil.MakePaddleJob("x.y", "ns").UID(uid1).Obj(),
		testutil.MakePaddleJob("x", "ns").UID(uid2).Obj(),
	}
	if got, want := elasticJobID(jobs[2]), "ns_el_"+uid1; got != want {
		t.Errorf("elasticJobID = %q, want %q", got, want)
	}
	for i, a := range jobs {
		for j, b := range jobs {
			if i == j {
				continue
			}
			if idA, idB := elasticJobID(a), elasticJobID(b); strings.HasPrefix(idB, idA) {
				t.Errorf("the id of %s/%s, %q, is a prefix of %s/%s's, %q", a.Namespace, a.Name, idA, b.Namespace, b.Name, idB)
			}
		}
	}
}

// pythonStrip is Python's str.strip(chars), as Paddle's launcher applies it
// to PADDLE_MASTER: every character of chars off both ends.
func pythonStrip(s, chars string) string {
	return strings.Trim(s, chars)
}

func TestLauncherEtcdHostSurvivesTheStrip(t *testing.T) {
	tests := []struct{ hostPort, want string }{
		{"etcd.paddle:2379", "Etcd.paddle:2379"},
		{"tcd-0.etcd:2379", "Tcd-0.etcd:2379"},
		{"c:2379", "C:2379"},
		{"d.ns.svc.cluster.local:2379", "D.ns.svc.cluster.local:2379"},
		{"operator-etcd:2379", "operator-etcd:2379"},
		{"127.0.0.1:2379", "127.0.0.1:2379"},
		{"10.0.0.1:32379", "10.0.0.1:32379"},
		{"Etcd.paddle:2379", "Etcd.paddle:2379"},
	}
	for _, tc := range tests {
		t.Run(tc.hostPort, func(t *testing.T) {
			got := launcherEtcdHost(tc.hostPort)
			if got != tc.want {
				t.Errorf("launcherEtcdHost(%q) = %q, want %q", tc.hostPort, got, tc.want)
			}
			if kept := pythonStrip("etcd://"+got, "etcd://"); kept != got || !strings.EqualFold(kept, tc.hostPort) {
				t.Errorf("Paddle's launcher reads etcd://%s as %q, not a host:port naming %s", got, kept, tc.hostPort)
			}
		})
	}
}

func TestElasticMaxRestart(t *testing.T) {
	tests := []struct {
		name string
		job  *paddlev1.PaddleJob
		want int64
	}{{
		// 2 × (2 × 6 failures + 3 workers joining)
		name: "the default backoffLimit, at most 3 workers",
		job:  testutil.MakePaddleJob("el", "ns").Workers(3).Elastic(2, 3).Obj(),
		want: 30,
	}, {
		name: "no failure tolerated: only workers joining",
		job:  testutil.MakePaddleJob("el", "ns").Workers(2).Elastic(2, 4).BackoffLimit(0).Obj(),
		want: 8,
	}, {
		name: "paddle-operator's elastic: 1, bounded by the worker's limits",
		job: func() *paddlev1.PaddleJob {
			j := testutil.MakePaddleJob("el", "ns").Workers(2).BackoffLimit(2).Obj()
			j.Spec.Elastic = ptr.To[int32](1)
			j.Spec.Worker.Limits = ptr.To[int32](5)
			return j
		}(),
		want: 18,
	}, {
		name: "the largest backoffLimit does not overflow",
		job:  testutil.MakePaddleJob("el", "ns").Workers(2).Elastic(1, paddlev1.MaxReplicas).BackoffLimit(1<<31 - 1).Obj(),
		want: 2 * (2*(1<<31-1) + paddlev1.MaxReplicas),
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := elasticMaxRestart(&tc.job.Spec); got != tc.want {
				t.Errorf("PADDLE_MAX_RESTART = %d, want %d", got, tc.want)
			}
		})
	}
}
