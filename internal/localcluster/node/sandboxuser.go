package node

import (
	corev1 "k8s.io/api/core/v1"
)

// Who a pod's processes are. Every sandbox has a user namespace of its own
// in which the node's user is mapped to one uid and gid, the sandbox's: the
// pod's securityContext runAsUser and runAsGroup (the container's over the
// pod's), else, on a root node, DefaultSandboxUID and DefaultSandboxGID:
// root in the pod, as a container of Paddle's images (whose user is root)
// runs, without a capability and, seen from the host, as the node's range's
// base uid (sandbox_hostids.go), never the host's root. A pod that says
// runAsNonRoot and names no uid runs as NonRootSandboxUID, as an image
// whose user is not root would. An ordinary user's node keeps that user's
// own uid unless the pod names one. Files the pod writes belong to the
// node's user on the host.

// DefaultSandboxUID and DefaultSandboxGID are who a pod runs as on a root
// node when its securityContext names nobody: root, the user of Paddle's
// images.
const (
	DefaultSandboxUID = 0
	DefaultSandboxGID = 0
)

// NonRootSandboxUID and NonRootSandboxGID are who a runAsNonRoot pod that
// names no uid runs as on a root node: not root, and not 65534, the uid the
// user namespace shows for files of the host's other users.
const (
	NonRootSandboxUID = 1000
	NonRootSandboxGID = 1000
)

// sandboxIdentity is the uid and gid inside the sandbox; nil keeps the
// node's.
type sandboxIdentity struct {
	UID, GID *int64
}

// sandboxUser decides a container's identity from its and its pod's
// securityContext. runAsNonRoot with uid 0 is refused, as the kubelet
// refuses it.
func sandboxUser(pod *corev1.Pod, c *corev1.Container, asRoot bool) (sandboxIdentity, error) {
	var id sandboxIdentity
	var nonRoot *bool
	if sc := pod.Spec.SecurityContext; sc != nil {
		id.UID, id.GID, nonRoot = sc.RunAsUser, sc.RunAsGroup, sc.RunAsNonRoot
	}
	if sc := c.SecurityContext; sc != nil {
		if sc.RunAsUser != nil {
			id.UID = sc.RunAsUser
		}
		if sc.RunAsGroup != nil {
			id.GID = sc.RunAsGroup
		}
		if sc.RunAsNonRoot != nil {
			nonRoot = sc.RunAsNonRoot
		}
	}
	if asRoot {
		uid, gid := int64(DefaultSandboxUID), int64(DefaultSandboxGID)
		if id.UID == nil && nonRoot != nil && *nonRoot {
			uid, gid = NonRootSandboxUID, NonRootSandboxGID
		}
		if id.UID == nil {
			id.UID = &uid
		}
		if id.GID == nil {
			id.GID = &gid
		}
	}
	if nonRoot != nil && *nonRoot && id.UID != nil && *id.UID == 0 {
		return sandboxIdentity{}, configErrorf("container %q: securityContext.runAsNonRoot is true but runAsUser is 0 (root)", c.Name)
	}
	return id, nil
}
