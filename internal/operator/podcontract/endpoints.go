package podcontract

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
)

// The job variables (endpoint lists and counts) are published in one
// ConfigMap per job, <job>-endpoints, keyed by variable name, plus a version
// that identifies the lists; the pods mount it at EndpointsMountPath and read
// it with configMapKeyRef (the controller's endpoints.go writes it).
const (
	// EndpointsMountPath is where a pod's containers find the published job
	// variables as files, and the pod's own published version.
	EndpointsMountPath = "/etc/paddlejob"
	// VersionKey is the ConfigMap's key of its lists' version.
	VersionKey = "version"
)

// EndpointsConfigMapName is the name of a job's endpoints ConfigMap.
func EndpointsConfigMapName(job string) string { return job + "-endpoints" }

// EndpointsData is the ConfigMap data for a job's variables, with its version.
func EndpointsData(values map[string]string) map[string]string {
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
	data[VersionKey] = hex.EncodeToString(h.Sum(nil))[:16]
	return data
}
