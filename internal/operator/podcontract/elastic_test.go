package podcontract

import (
	"strings"
	"testing"

	"k8s.io/utils/ptr"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/internal/testutil"
)

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
	if got, want := ElasticJobID(jobs[2]), "ns_el_"+uid1; got != want {
		t.Errorf("ElasticJobID = %q, want %q", got, want)
	}
	for i, a := range jobs {
		for j, b := range jobs {
			if i == j {
				continue
			}
			if idA, idB := ElasticJobID(a), ElasticJobID(b); strings.HasPrefix(idB, idA) {
				t.Errorf("the id of %s/%s, %q, is a prefix of %s/%s's, %q", a.Namespace, a.Name, idA, b.Namespace, b.Name, idB)
			}
		}
	}
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
			got := LauncherEtcdHost(tc.hostPort)
			if got != tc.want {
				t.Errorf("LauncherEtcdHost(%q) = %q, want %q", tc.hostPort, got, tc.want)
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
			if got := ElasticMaxRestart(&tc.job.Spec); got != tc.want {
				t.Errorf("PADDLE_MAX_RESTART = %d, want %d", got, tc.want)
			}
		})
	}
}

// pythonStrip is Python's str.strip(chars), as Paddle's launcher applies it
// to PADDLE_MASTER: every character of chars off both ends.
func pythonStrip(s, chars string) string {
	return strings.Trim(s, chars)
}
