package controller

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
)

// The job variables (endpoint lists and counts) are published in one
// ConfigMap per job, <job>-endpoints, keyed by variable name, plus a version
// that identifies the lists. Pods read them with configMapKeyRef. In PodIP and
// Host intranet a pod's training containers start only after the operator has
// set the pod's AnnotationEndpoints to the version that includes it, which it
// does once every pod has an IP: no process ever starts with a partial list.

func endpointsConfigMapName(job string) string { return job + "-endpoints" }

// observedTopology is the job's topology from its live pods: the address and
// recorded ports of pod i of each role i < replicas. Missing pods and pods
// without an address leave an empty host.
func observedTopology(job *paddlev1.PaddleJob, pods []*corev1.Pod) topology {
	topo := topology{}
	for _, rt := range paddlev1.ReplicaTypes {
		if n := job.Spec.ReplicaCount(rt); n > 0 {
			topo[rt] = make([]member, n)
		}
	}
	for _, pod := range pods {
		rt, i, ok := podIndex(pod)
		if !ok || i >= len(topo[rt]) || pod.DeletionTimestamp != nil {
			continue
		}
		ports, err := podPortRange(pod)
		if err != nil {
			continue
		}
		host := pod.Status.PodIP
		if !waitsForEndpoints(&job.Spec) {
			host = serviceHost(job.Name, rt, i)
		}
		topo[rt][i] = member{Host: host, Ports: ports}
	}
	return topo
}

// plannedJobValues are the job variables of a job whose addresses are known
// before any pod exists — Service intranet, where they are DNS names — and
// nil for the intranets whose pods wait for their addresses.
func plannedJobValues(job *paddlev1.PaddleJob) map[string]string {
	if waitsForEndpoints(&job.Spec) {
		return nil
	}
	topo := topology{}
	for _, rt := range paddlev1.ReplicaTypes {
		for i := 0; i < job.Spec.ReplicaCount(rt); i++ {
			topo[rt] = append(topo[rt], member{Host: serviceHost(job.Name, rt, i), Ports: podPorts(job, rt, i)})
		}
	}
	return jobEnv(&job.Spec, topo)
}

// endpointsData is the ConfigMap data for a job's variables, with its version.
func endpointsData(values map[string]string) map[string]string {
	data := make(map[string]string, len(values)+1)
	keys := make([]string, 0, len(values))
	for k, v := range values {
		data[k] = v
		keys = append(keys, k)
	}
	slices.Sort(keys)
	h := sha256.New()
	for _, k := range keys {
		h.Write([]byte(k))
		h.Write([]byte{0})
		h.Write([]byte(values[k]))
		h.Write([]byte{0})
	}
	data[versionKey] = hex.EncodeToString(h.Sum(nil))[:16]
	return data
}

func newEndpointsConfigMap(job *paddlev1.PaddleJob, data map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{
			Name:            endpointsConfigMapName(job.Name),
			Namespace:       job.Namespace,
			Labels:          map[string]string{paddlev1.LabelJobName: job.Name},
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(job, paddlev1.GroupVersion.WithKind("PaddleJob"))},
		},
		Data: data,
	}
}
