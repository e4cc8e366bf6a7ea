package controller

import (
	"fmt"
	"net/url"
	"strconv"

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

// DefaultElasticTimeout is PADDLE_ELASTIC_TIMEOUT when the job names none:
// Paddle's launcher's own default. Below the job's maximum of workers, it is
// how long membership must stay still before training (re)starts.
const DefaultElasticTimeout = 30

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
		{Name: "PADDLE_ELASTIC_JOB_ID", Value: job.Namespace + "-" + job.Name},
		{Name: "PADDLE_ELASTIC_NP", Value: nodes},
		{Name: "PADDLE_ELASTIC_TIMEOUT", Value: strconv.Itoa(int(timeout))},
	}
	if len(endpoints) > 0 {
		server := etcdHostPort(endpoints[0])
		env = append([]corev1.EnvVar{
			{Name: envMaster, Value: "etcd://" + server},
			{Name: "PADDLE_ELASTIC_SERVER", Value: server},
		}, env...)
	}
	return env
}

// etcdHostPort is the host:port of an etcd endpoint URL (validated at
// admission by paddlev1.ValidateSpec), or the endpoint itself when it is
// already host:port.
func etcdHostPort(endpoint string) string {
	if u, err := url.Parse(endpoint); err == nil && u.Host != "" {
		return u.Host
	}
	return endpoint
}
