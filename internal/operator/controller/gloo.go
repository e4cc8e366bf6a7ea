package controller

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"

	corev1 "k8s.io/api/core/v1"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/internal/operator/podcontract"
)

// Gloo (spec.withGloo): what each pod gets is the contract's
// (internal/operator/podcontract, gloo.go); here, the store prefix of each
// attempt on the file-system rendezvous, recorded on its pods.

// annotationGlooStorePrefix records on each pod the store prefix (SYS_JOB_ID)
// of its attempt in the file-system rendezvous, so pods created later in
// the same attempt get the same.
const annotationGlooStorePrefix = "batch.paddlepaddle.org/gloo-store-prefix"

// glooStorePrefix is the store prefix of the pods a pass creates for a job
// on the file-system rendezvous ("" for any other job). Paddle keeps each
// process's address in <PADDLE_GLOO_FS_PATH>/<WORKER|SERVER|ALL>/<prefix>/<rank>,
// replaces only its own file and never removes one, and a process that finds
// a peer's file connects to it at once: with a prefix an earlier attempt
// used, it would meet that attempt's dead addresses and abort (measured:
// gloo::IoException "Connection refused"). So every attempt of the job — its
// first pods, each restart of the whole job, each resume — gets a prefix of
// its own: the job's identity (PADDLE_JOB_ID and UID), its restart count and
// a random part (a resume does not count as a restart). Pods created while
// others of the job live join theirs: those of one attempt created over
// several passes, and a failed pod recreated alone.
func glooStorePrefix(job *paddlev1.PaddleJob, pods []*corev1.Pod) string {
	if !podcontract.UsesGlooFiles(&job.Spec, paddlev1.ReplicaWorker) {
		return ""
	}
	for _, p := range pods {
		if prefix := p.Annotations[annotationGlooStorePrefix]; prefix != "" && p.DeletionTimestamp == nil {
			return prefix
		}
	}
	attempt := make([]byte, 4)
	_, _ = rand.Read(attempt) // never fails (crypto/rand)
	return fmt.Sprintf("%s-%s-%d-%s", job.Namespace+"-"+job.Name, job.UID, job.Status.RestartCount, hex.EncodeToString(attempt))
}
