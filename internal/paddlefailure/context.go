package paddlefailure

import (
	"path"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// A signature's context is what Go reads from the pod to complete its text:
// the case of the signature's cases that applies, and variables for the
// text. The table names one by its key; every text may also use
// {container}.
var contexts = map[string]contextKind{
	// None: the log says it all.
	"": {resolve: func(input, map[string]string) resolved { return resolved{} }},
	// node: whether the pod ran on paddlejob's local cluster, whose nodes
	// run no Dockerfile RUN and emulate GPUs (case local), or elsewhere
	// (case cluster).
	"node": {cases: []string{"local", "cluster"}, resolve: func(in input, _ map[string]string) resolved {
		if onLocalCluster(in.pod) {
			return resolved{name: "local"}
		}
		return resolved{name: "cluster"}
	}},
	// job-mode: the mode of the pod's job (Mode), case ps or collective;
	// no case for a pod of no PaddleJob.
	"job-mode": {cases: []string{ModePS, ModeCollective}, resolve: func(in input, _ map[string]string) resolved {
		return resolved{name: in.mode}
	}},
	// memory: the container's memory limit, {limit}; case limit when it
	// has one, else local (the local node's limit for every pod) or
	// cluster.
	"memory": {cases: []string{"limit", "local", "cluster"}, resolve: resolveMemory},
	// writable-path: where {path}, a path the program could not write,
	// lies in the pod: the volume and mount that hold it ({volume},
	// {kind}, {mountPath}, {hostPath}), and why it is read-only (the cases).
	"writable-path": {cases: writablePathCases, resolve: resolveWritablePath},
}

type contextKind struct {
	// cases are the names resolve may return.
	cases   []string
	resolve func(in input, vars map[string]string) resolved
}

// resolved is a context's answer: a case ("" for none) and variables.
type resolved struct {
	name string
	vars map[string]string
}

// localNodeName is the name of the local cluster's first node; its others
// are localNodeName-2, -3... (internal/localcluster).
const localNodeName = "paddlejob-node"

// onLocalCluster reports whether the pod ran on a node of paddlejob's
// local cluster.
func onLocalCluster(pod *corev1.Pod) bool {
	if pod == nil {
		return false
	}
	n := pod.Spec.NodeName
	return n == localNodeName || strings.HasPrefix(n, localNodeName+"-")
}

func resolveMemory(in input, _ map[string]string) resolved {
	if in.container != nil {
		if q, ok := in.container.Resources.Limits[corev1.ResourceMemory]; ok {
			return resolved{name: "limit", vars: map[string]string{"limit": q.String()}}
		}
	}
	if onLocalCluster(in.pod) {
		return resolved{name: "local"}
	}
	return resolved{name: "cluster"}
}

// The cases of writable-path.
var writablePathCases = []string{
	"read-only-mount",  // the volumeMount says readOnly: true
	"read-only-kind",   // a configMap, secret, downwardAPI or projected volume: always read-only
	"read-only-claim",  // persistentVolumeClaim.readOnly: true
	"local-host-path",  // a hostPath volume on the local cluster, outside its --host-path-rw directories
	"volume",           // another volume, writable as far as the pod says: its source is read-only
	"read-only-root",   // on no volume, with readOnlyRootFilesystem: true
	"container-fs",     // on no volume: the container's own files
	"unknown-location", // no pod, container or absolute path to tell
}

func resolveWritablePath(in input, vars map[string]string) resolved {
	p := vars["path"]
	c := in.container
	if c == nil || p == "" {
		return resolved{name: "unknown-location"}
	}
	if !path.IsAbs(p) {
		if c.WorkingDir == "" {
			return resolved{name: "unknown-location"}
		}
		p = path.Join(c.WorkingDir, p)
	}
	p = path.Clean(p)
	m := mountOf(c.VolumeMounts, p)
	if m == nil {
		if sc := c.SecurityContext; sc != nil && sc.ReadOnlyRootFilesystem != nil && *sc.ReadOnlyRootFilesystem {
			return resolved{name: "read-only-root"}
		}
		return resolved{name: "container-fs"}
	}
	out := resolved{vars: map[string]string{"volume": m.Name, "mountPath": m.MountPath, "kind": "volume"}}
	v := volumeOf(in.pod, m.Name)
	if v != nil {
		out.vars["kind"] = volumeKind(v)
	}
	switch {
	case m.ReadOnly:
		out.name = "read-only-mount"
	case v == nil:
		out.name = "volume"
	case v.ConfigMap != nil || v.Secret != nil || v.DownwardAPI != nil || v.Projected != nil:
		out.name = "read-only-kind"
	case v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ReadOnly:
		out.name = "read-only-claim"
		out.vars["claim"] = v.PersistentVolumeClaim.ClaimName
	case v.HostPath != nil && onLocalCluster(in.pod):
		out.name = "local-host-path"
		out.vars["hostPath"] = v.HostPath.Path
	default:
		out.name = "volume"
	}
	return out
}

// mountOf is the mount that holds p: the deepest whose path is p or one of
// its parents.
func mountOf(mounts []corev1.VolumeMount, p string) *corev1.VolumeMount {
	var best *corev1.VolumeMount
	for i := range mounts {
		mp := path.Clean(mounts[i].MountPath)
		if p != mp && !strings.HasPrefix(p, strings.TrimSuffix(mp, "/")+"/") {
			continue
		}
		if best == nil || len(mp) > len(path.Clean(best.MountPath)) {
			best = &mounts[i]
		}
	}
	return best
}

func volumeOf(pod *corev1.Pod, name string) *corev1.Volume {
	if pod == nil {
		return nil
	}
	for i := range pod.Spec.Volumes {
		if pod.Spec.Volumes[i].Name == name {
			return &pod.Spec.Volumes[i]
		}
	}
	return nil
}

// volumeKind names a volume's source as its field does: hostPath,
// persistentVolumeClaim "data", emptyDir...
func volumeKind(v *corev1.Volume) string {
	s := v.VolumeSource
	switch {
	case s.HostPath != nil:
		return "hostPath " + s.HostPath.Path
	case s.PersistentVolumeClaim != nil:
		return "persistentVolumeClaim " + s.PersistentVolumeClaim.ClaimName
	case s.EmptyDir != nil:
		return "emptyDir"
	case s.ConfigMap != nil:
		return "configMap " + s.ConfigMap.Name
	case s.Secret != nil:
		return "secret " + s.Secret.SecretName
	case s.DownwardAPI != nil:
		return "downwardAPI"
	case s.Projected != nil:
		return "projected"
	case s.NFS != nil:
		return "nfs " + s.NFS.Server + ":" + s.NFS.Path
	case s.CephFS != nil:
		return "cephfs"
	case s.CSI != nil:
		return "csi " + s.CSI.Driver
	case s.Ephemeral != nil:
		return "ephemeral"
	}
	return "volume"
}
