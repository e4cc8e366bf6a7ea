package v1

import (
	"fmt"
	"net"
	"net/url"
	"reflect"
	"strconv"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Names the operator reserves in every pod template.
const (
	// ReservedInitContainer holds a pod's training containers back until the
	// job's endpoints are published.
	ReservedInitContainer = "wait-for-endpoints"
	// ReservedVolume mounts the job's endpoints at /etc/paddlejob.
	ReservedVolume = "paddlejob-endpoints"
)

// ValidateSpec checks what the CRD schema cannot: names the operator
// reserves, and rules across roles. The admission webhook rejects what it
// finds; without the webhook the operator fails the job with it.
func ValidateSpec(spec *PaddleJobSpec) field.ErrorList {
	var errs field.ErrorList
	for _, rt := range ReplicaTypes {
		rs := spec.Replicas(rt)
		if rs == nil {
			continue
		}
		path := field.NewPath("spec", string(rt), "template", "spec")
		for i, c := range rs.Template.Spec.InitContainers {
			if c.Name == ReservedInitContainer {
				errs = append(errs, field.Invalid(path.Child("initContainers").Index(i).Child("name"), c.Name, "is reserved for the operator's init container; rename the container"))
			}
		}
		for i, c := range rs.Template.Spec.Containers {
			if c.Name == ReservedInitContainer {
				errs = append(errs, field.Invalid(path.Child("containers").Index(i).Child("name"), c.Name, "is reserved for the operator's init container; rename the container"))
			}
		}
		for i, v := range rs.Template.Spec.Volumes {
			if v.Name == ReservedVolume {
				errs = append(errs, field.Invalid(path.Child("volumes").Index(i).Child("name"), v.Name, "is reserved for the job's endpoints; rename the volume"))
			}
		}
	}
	if p := spec.ElasticPolicy; p != nil {
		for i, e := range p.EtcdEndpoints {
			if msg := invalidEtcdEndpoint(e); msg != "" {
				errs = append(errs, field.Invalid(field.NewPath("spec", "elasticPolicy", "etcdEndpoints").Index(i), e, msg))
			}
		}
	}
	if p := spec.SchedulingPolicy; p != nil && p.MinAvailable != nil && int(*p.MinAvailable) > spec.TotalReplicas() {
		errs = append(errs, field.Invalid(field.NewPath("spec", "schedulingPolicy", "minAvailable"), *p.MinAvailable,
			fmt.Sprintf("exceeds the job's %d pods", spec.TotalReplicas())))
	}
	return errs
}

// ValidateUpdate checks a change to a job that has started: what its pods
// were created from may not change under them — roles, templates, intranet,
// Gloo, gang scheduling — while replicas, suspend, deadlines and policies may.
// A suspended job (before and after the change) may change everything.
func ValidateUpdate(old, updated *PaddleJob) field.ErrorList {
	if old.Status.StartTime == nil && old.Status.Phase == "" {
		return nil // nothing was created from the spec yet
	}
	// A suspended job has no pods to disagree with its spec: it may change
	// in the same update that suspends or resumes it, as Kueue's stop and
	// start do (restoring and injecting the templates' scheduling fields).
	if old.Spec.IsSuspended() || updated.Spec.IsSuspended() {
		return nil
	}
	var errs field.ErrorList
	immutable := func(path *field.Path, a, b any) {
		if !reflect.DeepEqual(a, b) {
			errs = append(errs, field.Forbidden(path, "may not change once the job has started; suspend it first (spec.suspend), or delete and recreate it"))
		}
	}
	spec := field.NewPath("spec")
	immutable(spec.Child("intranet"), old.Spec.EffectiveIntranet(), updated.Spec.EffectiveIntranet())
	immutable(spec.Child("withGloo"), old.Spec.GlooLevel(), updated.Spec.GlooLevel())
	immutable(spec.Child("schedulingPolicy"), old.Spec.SchedulingPolicy, updated.Spec.SchedulingPolicy)
	for _, rt := range ReplicaTypes {
		o, n := old.Spec.Replicas(rt), updated.Spec.Replicas(rt)
		path := spec.Child(string(rt))
		switch {
		case (o == nil) != (n == nil):
			errs = append(errs, field.Forbidden(path, "roles may not be added or removed once the job has started"))
		case o != nil:
			immutable(path.Child("template"), o.Template, n.Template)
		}
	}
	return errs
}

// invalidEtcdEndpoint says what is wrong with an elastic etcd endpoint, or
// "". Paddle's elastic launcher dials one etcd as host:port, without TLS.
func invalidEtcdEndpoint(endpoint string) string {
	const want = "must be http://host:port (Paddle's elastic launcher connects to etcd without TLS)"
	u, err := url.Parse(endpoint)
	if err != nil || u.Scheme != "http" || u.Host == "" || u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		return want
	}
	host, port, err := net.SplitHostPort(u.Host)
	if err != nil || host == "" {
		return want
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return "the port " + want
	}
	return ""
}
