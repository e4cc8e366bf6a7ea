package controller

import (
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
)

// Elastic training: Paddle's launcher (python -m paddle.distributed.launch)
// runs elastic when PADDLE_MASTER is etcd://host:port. Every pod registers a
// heartbeat under /paddle/<PADDLE_JOB_ID>/ in that etcd, waits until between
// the bounds of PADDLE_NNODES=min:max peers are alive, and restarts its
// training processes whenever membership changes. The operator only gives
// the pods those variables and keeps the number of worker pods within the
// bounds (scaling, replacing failed workers: restart policy OnFailure by
// default); it writes nothing to etcd itself.
//
// What the pods get is shaped by four things Paddle 3.0.0's launcher does
// (docs/env-contract.md cites the lines):
//
//   - A rank from PADDLE_TRAINER_ID is kept for ever: ETCDMaster.sync_peers
//     places each pod at its rank in a list sized to the live pods, and
//     fails (IndexError) once a worker below the highest rank is gone. An
//     elastic pod gets no PADDLE_TRAINER_ID, so the launcher ranks the live
//     pods itself (validation.ElasticRankNames refuses a template's).
//   - A launcher starting clears every etcd key under /paddle/<job id>, a
//     key prefix: the keys of every job whose id that id is a prefix of too
//     (elasticJobID).
//   - The launcher restarts training at most PADDLE_MAX_RESTART times, 3 by
//     default, counting every membership change (elasticMaxRestart).
//   - The launcher takes "etcd://" off PADDLE_MASTER with Python's
//     str.strip, which removes characters, not a prefix (launcherEtcdHost).

// DefaultElasticTimeout is PADDLE_ELASTIC_TIMEOUT when the job names none:
// Paddle's launcher's own default. Below the job's maximum of workers, it is
// how long membership must stay still before training (re)starts.
const DefaultElasticTimeout = 30

// elasticJobID is PADDLE_JOB_ID (and PADDLE_ELASTIC_JOB_ID) of an elastic
// job: <namespace>_<name>_<uid>, readable and unique in the cluster, and no
// other job's id is a prefix of it. '_' is in no namespace (a DNS label), no
// object name (a DNS subdomain) and no UID (a UUID: hex digits and '-'), so
// the first two '_' of an id end its namespace and its name: an id that is a
// prefix of another has the other's namespace and name, and a UID that is a
// prefix of the other's UID — the same UID, as the API server's UIDs all
// have 36 characters. A job deleted and created again under its name gets a
// new id, so launchers of the old pods still stopping cannot disturb it.
// (Paddle also names its log files after the id: it holds no '/'.)
func elasticJobID(job *paddlev1.PaddleJob) string {
	return job.Namespace + "_" + job.Name + "_" + string(job.UID)
}

// launcherRestartsPerChange is how many times one membership change may
// restart training in a running launcher: a launcher that starts clears the
// heartbeats of the whole job before it writes its own (register_heartbeat),
// and each of the others writes its own again up to half a heartbeat TTL
// later — a second change to the heartbeats it watches.
const launcherRestartsPerChange = 2

// elasticMaxRestart is PADDLE_MAX_RESTART: how many times a pod's launcher
// restarts training before it exits. Every membership change it sees counts,
// so it fits the changes the operator lets the job go through while that
// launcher runs: each of the backoffLimit failures the operator tolerates
// takes a worker away and brings it back (two changes), and up to
// maxReplicas workers may join late (started after training began, or
// added by scaling up). Paddle's default, 3, gives out after one or two
// failures and fails every pod at once. A training process that keeps
// failing is still bounded: its launcher exits, a container failure the
// operator counts against backoffLimit.
func elasticMaxRestart(spec *paddlev1.PaddleJobSpec) int64 {
	_, maxReplicas := spec.ElasticBounds()
	changes := 2*int64(spec.BackoffLimitOrDefault()) + int64(maxReplicas)
	return launcherRestartsPerChange * changes
}

// elasticEndpoints are the etcd endpoints of a job: its own, else the
// operator's.
func elasticEndpoints(job *paddlev1.PaddleJob, operatorDefault []string) []string {
	if p := job.Spec.ElasticPolicy; p != nil && len(p.EtcdEndpoints) > 0 {
		return p.EtcdEndpoints
	}
	return operatorDefault
}

// elasticEnv is the elastic environment of an elastic job's pods: Paddle
// 3.x's launcher variables and the legacy launcher's (fleet.elastic, Paddle
// 2.x or --legacy). Both clients take one etcd server; the first endpoint is
// theirs.
func elasticEnv(job *paddlev1.PaddleJob, endpoints []string) []corev1.EnvVar {
	if !job.Spec.IsElastic() {
		return nil
	}
	minR, maxR := job.Spec.ElasticBounds()
	nodes := fmt.Sprintf("%d:%d", minR, maxR)
	timeout := int32(DefaultElasticTimeout)
	if p := job.Spec.ElasticPolicy; p != nil && p.TimeoutSeconds != nil {
		timeout = *p.TimeoutSeconds
	}
	// Paddle's launcher restarts training when workers join or leave only at
	// an elastic level of 1 or more; at its default (-1) it exits.
	level := int32(1)
	if e := job.Spec.Elastic; e != nil && *e > 0 {
		level = *e
	}
	env := []corev1.EnvVar{
		{Name: envNNodes, Value: nodes},
		{Name: "PADDLE_ELASTIC_LEVEL", Value: strconv.Itoa(int(level))},
		{Name: "PADDLE_MAX_RESTART", Value: strconv.FormatInt(elasticMaxRestart(&job.Spec), 10)},
		{Name: "PADDLE_ELASTIC_JOB_ID", Value: elasticJobID(job)},
		{Name: "PADDLE_ELASTIC_NP", Value: nodes},
		{Name: "PADDLE_ELASTIC_TIMEOUT", Value: strconv.Itoa(int(timeout))},
	}
	if len(endpoints) > 0 {
		server := etcdHostPort(endpoints[0])
		env = append([]corev1.EnvVar{
			{Name: envMaster, Value: "etcd://" + launcherEtcdHost(server)},
			// The legacy launcher splits host:port as it is.
			{Name: "PADDLE_ELASTIC_SERVER", Value: server},
		}, env...)
	}
	return env
}

// etcdHostPort is the host:port of an etcd endpoint URL (validated at
// admission by internal/operator/validation), or the endpoint itself when it is
// already host:port.
func etcdHostPort(endpoint string) string {
	if u, err := url.Parse(endpoint); err == nil && u.Host != "" {
		return u.Host
	}
	return endpoint
}

// launcherEtcdHost is an etcd host:port as PADDLE_MASTER must carry it for
// Paddle's launcher to keep it whole. The launcher removes "etcd://" by
// stripping the characters e, t, c, d, ':' and '/' from both ends of the
// value, so a host beginning with e, t, c or d loses those letters
// (etcd.paddle:2379 becomes .paddle:2379). A port ends the value with a
// digit, and an IP or a name beginning with any other character is kept;
// a name beginning with one of those letters gets that letter in upper case,
// which the strip keeps and which names the same host (DNS names are
// case-insensitive, RFC 4343; so are /etc/hosts lookups).
func launcherEtcdHost(hostPort string) string {
	host, port, err := net.SplitHostPort(hostPort)
	if err != nil || host == "" || !strings.ContainsRune("etcd", rune(host[0])) {
		return hostPort
	}
	return net.JoinHostPort(strings.ToUpper(host[:1])+host[1:], port)
}
