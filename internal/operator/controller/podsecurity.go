package controller

import (
	"errors"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
)

// PodSecurity admission refusing a job's pods. The operator adds nothing
// beyond the template that a PodSecurity level looks at but what the job's
// layout asks for: `intranet: Host` puts the pods on their node's network
// (hostNetwork and host ports, refused by baseline); its own init container
// and volumes (the endpoints and progress projections, an emptyDir) pass
// restricted. Everything else a level may refuse (hostPath volumes,
// privileged, capabilities, runAsUser 0...) comes from the template. When
// the namespace's level refuses a pod, the Created condition says so under
// a reason of its own, with the level and the fields the API server named.

// podSecurityMarker begins the API server's message for a pod PodSecurity
// admission refuses: `violates PodSecurity "baseline:latest": host
// namespaces (hostNetwork=true), hostPath volumes (volume "etc")`.
const podSecurityMarker = "violates PodSecurity "

// isPodSecurityRefusal reports whether err is PodSecurity admission
// refusing a pod.
func isPodSecurityRefusal(err error) bool {
	return apierrors.IsForbidden(err) && strings.Contains(err.Error(), podSecurityMarker)
}

// podSecurityError is a pod create PodSecurity refused.
type podSecurityError struct {
	pod, namespace string
	err            error
}

func (e *podSecurityError) Error() string {
	msg := e.err.Error()
	if i := strings.Index(msg, podSecurityMarker); i >= 0 {
		msg = msg[i:]
	}
	return fmt.Sprintf("creating pod %s: namespace %s's PodSecurity level refuses it: %s; "+
		"remove those fields from the job's template, or have an administrator label the namespace "+
		"pod-security.kubernetes.io/enforce with a level that allows them (Host intranet and hostPath volumes need privileged)",
		e.pod, e.namespace, msg)
}

func (e *podSecurityError) Unwrap() error { return e.err }

// podCreationReason is the Created condition's reason for a failed pod
// create: PodSecurityRefused when PodSecurity refused a pod.
func podCreationReason(err error) string {
	var ps *podSecurityError
	if errors.As(err, &ps) {
		return paddlev1.ReasonPodSecurityRefused
	}
	return paddlev1.ReasonPodCreationFailed
}
