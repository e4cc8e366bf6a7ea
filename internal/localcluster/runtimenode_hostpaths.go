package localcluster

import (
	"fmt"
	"strconv"
	"strings"
)

// The container-runtime node's kubelet mounts any hostPath a pod names;
// the process node refuses every host path but those up allowed
// (docs/local-cluster.md#host-paths). On that node the same rule is a
// ValidatingAdmissionPolicy, written when the cluster starts: a pod's
// hostPath volumes lie in a --host-path-rw directory, or in a
// --host-path-ro one with every mount of them read-only; none is the
// cluster's home, a kubeconfig or the host's kernel views, nor holds one;
// no path has a ".." segment. The kubelet follows a symbolic link in a
// host path, which the process node does not: docs say so.

// HostPathDirs are the directories of the host-path policy: pods may mount
// those of ReadWrite, those of ReadOnly read-only, and none holding or
// inside one of Hidden.
type HostPathDirs struct {
	ReadOnly  []string `json:"readOnly,omitempty"`
	ReadWrite []string `json:"readWrite,omitempty"`
	Hidden    []string `json:"hidden,omitempty"`
}

// policy is the policy and its binding as YAML.
func (d HostPathDirs) policy() string {
	return runtimeNodeHostPathPolicy(d.ReadOnly, d.ReadWrite, d.Hidden)
}

// hostPathPolicyName names the policy and its binding.
const hostPathPolicyName = "paddlejob-host-paths"

// runtimeNodeHostPathPolicy is the policy and its binding as YAML.
func runtimeNodeHostPathPolicy(ro, rw, hidden []string) string {
	under := func(dirs []string) string {
		return fmt.Sprintf("%s.exists(d, v.hostPath.path == d || v.hostPath.path.startsWith(d + '/'))", celList(dirs))
	}
	readOnly := func(containers string) string {
		return fmt.Sprintf("%s.all(c, !has(c.volumeMounts) || c.volumeMounts.all(m, m.name != v.name || (has(m.readOnly) && m.readOnly)))", containers)
	}
	allowed := strings.Join([]string{
		"!v.hostPath.path.split('/').exists(s, s == '..')",
		fmt.Sprintf("!%s.exists(h, v.hostPath.path == h || v.hostPath.path.startsWith(h + '/') || h.startsWith(v.hostPath.path.endsWith('/') ? v.hostPath.path : v.hostPath.path + '/'))", celList(hidden)),
		fmt.Sprintf("(%s || (%s && %s && (!has(object.spec.initContainers) || %s)))",
			under(rw), under(ro), readOnly("object.spec.containers"), readOnly("object.spec.initContainers")),
	}, " && ")
	message := fmt.Sprintf("'hostPath ' + object.spec.volumes.filter(v, has(v.hostPath)).map(v, v.hostPath.path).join(', ') + "+
		"': pods of this local cluster may mount only paths in %s (read-write) or in %s (read-only, every mount readOnly), none holding or inside %s; "+
		"allow a directory with paddlejob up --host-path-rw DIR or --host-path-ro DIR'",
		celText(rw), celText(ro), celText(hidden))
	return fmt.Sprintf(`apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: %[1]s
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
    - apiGroups: [""]
      apiVersions: [v1]
      operations: [CREATE]
      resources: [pods]
  validations:
  - expression: %[2]s
    messageExpression: %[3]s
    reason: Forbidden
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: %[1]s
spec:
  policyName: %[1]s
  validationActions: [Deny]
`, hostPathPolicyName, strconv.Quote("!has(object.spec.volumes) || object.spec.volumes.all(v, !has(v.hostPath) || ("+allowed+"))"), strconv.Quote(message))
}

// celList is a CEL list of strings.
func celList(items []string) string {
	quoted := make([]string, len(items))
	for i, s := range items {
		quoted[i] = strconv.Quote(s)
	}
	return "[" + strings.Join(quoted, ", ") + "]"
}

// celText is a list for a message, inside a CEL single-quoted string.
func celText(items []string) string {
	if len(items) == 0 {
		return "no directory"
	}
	return strings.ReplaceAll(strings.Join(items, ", "), "'", `\'`)
}
