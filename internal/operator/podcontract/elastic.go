package podcontract

import (
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
)

// Elastic training: the variables an elastic job's pods get. Why each is as
// it is (what Paddle's launcher does with it) is said in the controller's
// elastic.go, which keeps the number of worker pods within the bounds.

// DefaultElasticTimeout is PADDLE_ELASTIC_TIMEOUT when the job names none:
// Paddle's launcher's own default. Below the job's maximum of workers, it is
// how long membership must stay still before training (re)starts.
const DefaultElasticTimeout = 30

// ElasticJobID is PADDLE_JOB_ID (and PADDLE_ELASTIC_JOB_ID) of an elastic
// job: <namespace>_<name>_<uid>, readable and unique in the cluster, and no
// other job's id is a prefix of it. '_' is in no namespace (a DNS label), no
// object name (a DNS subdomain) and no UID (a UUID: hex digits and '-'), so
// the first two '_' of an id end its namespace and its name: an id that is a
// prefix of another has the other's namespace and name, and a UID that is a
// prefix of the other's UID — the same UID, as the API server's UIDs all
// have 36 characters. A job deleted and created again under its name gets a
// new id, so launchers of the old pods still stopping cannot disturb it.
// (Paddle also names its log files after the id: it holds no '/'.)
func ElasticJobID(job *paddlev1.PaddleJob) string {
	return job.Namespace + "_" + job.Name + "_" + string(job.UID)
}

// launcherRestartsPerChange is how many times one membership change may
// restart training in a running launcher: a launcher that starts clears the
// heartbeats of the whole job before it writes its own (register_heartbeat),
// and each of the others writes its own again up to half a heartbeat TTL
// later — a second change to the heartbeats it watches.
const launcherRestartsPerChange = 2

// ElasticMaxRestart is PADDLE_MAX_RESTART: how many times a pod's launcher
// restarts training before it exits. Every membership change it sees counts,
// so it fits the changes the operator lets the job go through while that
// launcher runs: each of the backoffLimit failures the operator tolerates
// takes a worker away and brings it back (two changes), and up to
// maxReplicas workers may join late (started after training began, or
// added by scaling up). Paddle's default, 3, gives out after one or two
// failures and fails every pod at once. A training process that keeps
// failing is still bounded: its launcher exits, a container failure the
// operator counts against backoffLimit.
func ElasticMaxRestart(spec *paddlev1.PaddleJobSpec) int64 {
	_, maxReplicas := spec.ElasticBounds()
	changes := 2*int64(ptr.Deref(spec.BackoffLimit, paddlev1.DefaultBackoffLimit)) + int64(maxReplicas)
	return launcherRestartsPerChange * changes
}

// ElasticEndpoints are the etcd endpoints of a job: its own, else the
// operator's.
func ElasticEndpoints(job *paddlev1.PaddleJob, operatorDefault []string) []string {
	if p := job.Spec.ElasticPolicy; p != nil && len(p.EtcdEndpoints) > 0 {
		return p.EtcdEndpoints
	}
	return operatorDefault
}

// ElasticEnv is the elastic environment of an elastic job's pods: Paddle
// 3.x's launcher variables and the legacy launcher's (fleet.elastic, Paddle
// 2.x or --legacy). Both clients take one etcd server; the first endpoint is
// theirs.
func ElasticEnv(job *paddlev1.PaddleJob, endpoints []string) []corev1.EnvVar {
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
		{Name: EnvNNodes, Value: nodes},
		{Name: "PADDLE_ELASTIC_LEVEL", Value: strconv.Itoa(int(level))},
		{Name: "PADDLE_MAX_RESTART", Value: strconv.FormatInt(ElasticMaxRestart(&job.Spec), 10)},
		{Name: "PADDLE_ELASTIC_JOB_ID", Value: ElasticJobID(job)},
		{Name: "PADDLE_ELASTIC_NP", Value: nodes},
		{Name: "PADDLE_ELASTIC_TIMEOUT", Value: strconv.Itoa(int(timeout))},
	}
	if len(endpoints) > 0 {
		server := EtcdHostPort(endpoints[0])
		env = append([]corev1.EnvVar{
			{Name: EnvMaster, Value: "etcd://" + LauncherEtcdHost(server)},
			// The legacy launcher splits host:port as it is.
			{Name: "PADDLE_ELASTIC_SERVER", Value: server},
		}, env...)
	}
	return env
}

// EtcdHostPort is the host:port of an etcd endpoint URL (validated at
// admission by internal/operator/validation), or the endpoint itself when it is
// already host:port.
func EtcdHostPort(endpoint string) string {
	if u, err := url.Parse(endpoint); err == nil && u.Host != "" {
		return u.Host
	}
	return endpoint
}

// LauncherEtcdHost is an etcd host:port as PADDLE_MASTER must carry it for
// Paddle's launcher to keep it whole. The launcher removes "etcd://" by
// stripping the characters e, t, c, d, ':' and '/' from both ends of the
// value, so a host beginning with e, t, c or d loses those letters
// (etcd.paddle:2379 becomes .paddle:2379). A port ends the value with a
// digit, and an IP or a name beginning with any other character is kept;
// a name beginning with one of those letters gets that letter in upper case,
// which the strip keeps and which names the same host (DNS names are
// case-insensitive, RFC 4343; so are /etc/hosts lookups).
func LauncherEtcdHost(hostPort string) string {
	host, port, err := net.SplitHostPort(hostPort)
	if err != nil || host == "" || !strings.ContainsRune("etcd", rune(host[0])) {
		return hostPort
	}
	return net.JoinHostPort(strings.ToUpper(host[:1])+host[1:], port)
}
