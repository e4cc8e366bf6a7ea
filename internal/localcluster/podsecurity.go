package localcluster

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// PodSecurity on the local cluster: the API server's built-in PodSecurity
// admission enforces a level in every namespace that names none
// (`up --pod-security`, baseline unless told otherwise), and warns and
// audits at restricted; the cluster's own namespaces are exempt. The
// `default` namespace is labelled privileged, so the seeds' YAMLs (hostPath
// volumes, `intranet: Host`, which is hostNetwork) run there as written;
// every other namespace a user makes gets the cluster's level.

// PodSecurity levels (pod-security.kubernetes.io/enforce values).
const (
	PodSecurityPrivileged = "privileged"
	PodSecurityBaseline   = "baseline"
	PodSecurityRestricted = "restricted"
	// DefaultPodSecurity is the level namespaces get unless up is told
	// another.
	DefaultPodSecurity = PodSecurityBaseline
	// PodSecurityEnforceLabel is the namespace label that sets its level.
	PodSecurityEnforceLabel = "pod-security.kubernetes.io/enforce"
)

// podSecurityLevels are the levels --pod-security takes.
var podSecurityLevels = []string{PodSecurityPrivileged, PodSecurityBaseline, PodSecurityRestricted}

// CheckPodSecurityLevel refuses a level PodSecurity does not know.
func CheckPodSecurityLevel(level string) error {
	for _, l := range podSecurityLevels {
		if level == l {
			return nil
		}
	}
	return fmt.Errorf("--pod-security %q: want one of %s", level, strings.Join(podSecurityLevels, ", "))
}

// podSecurityExemptNamespaces are the cluster's own namespaces: what runs
// there is the cluster's, not a user's.
func podSecurityExemptNamespaces() []string {
	return []string{"kube-system", "kube-public", "kube-node-lease", operatorNS, KueueNamespace}
}

func (l layout) admissionConfig() string { return filepath.Join(l.home, "admission.yaml") }

// podSecurityAdmission is the API server's AdmissionConfiguration: the
// PodSecurity plugin's defaults (enforce level, warn and audit restricted)
// and its exempt namespaces.
func podSecurityAdmission(level string) string {
	return fmt.Sprintf(`apiVersion: apiserver.config.k8s.io/v1
kind: AdmissionConfiguration
plugins:
- name: PodSecurity
  configuration:
    apiVersion: pod-security.admission.config.k8s.io/v1
    kind: PodSecurityConfiguration
    defaults:
      enforce: %s
      enforce-version: latest
      warn: restricted
      warn-version: latest
      audit: restricted
      audit-version: latest
    exemptions:
      usernames: []
      runtimeClasses: []
      namespaces: [%s]
`, level, strings.Join(podSecurityExemptNamespaces(), ", "))
}

// writeAdmissionConfig writes the API server's admission configuration in
// the cluster's home.
func writeAdmissionConfig(l layout, level string) error {
	return os.WriteFile(l.admissionConfig(), []byte(podSecurityAdmission(level)), 0o644)
}

// defaultNamespacePrivileged labels the default namespace privileged, for
// the seeds' YAMLs applied there unchanged.
const defaultNamespacePrivileged = `apiVersion: v1
kind: Namespace
metadata:
  name: default
  labels:
    ` + PodSecurityEnforceLabel + `: ` + PodSecurityPrivileged + "\n"

// PodSecurityLevel is the cluster's PodSecurity level (a state written before
// there was one says none: privileged, which is what PodSecurity enforced).
func (s Settings) PodSecurityLevel() string {
	if s.PodSecurity == "" {
		return PodSecurityPrivileged
	}
	return s.PodSecurity
}
