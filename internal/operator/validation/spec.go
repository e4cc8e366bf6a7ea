package validation

import (
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
)

// validateReservedNames refuses a template that uses a name the operator
// gives its own containers (wait-for-endpoints, gloo-store) or volume: the pod would hold two of one
// name. (A schema rule could refuse it too, but not name the container's
// index, and the controller names it when it fails a job without the
// webhook.)
func validateReservedNames(spec *paddlev1.PaddleJobSpec) field.ErrorList {
	var errs field.ErrorList
	eachRole(spec, func(_ paddlev1.ReplicaType, rs *paddlev1.ReplicaSpec, path *field.Path) {
		const renameContainer = "is reserved for a container of the operator's; rename the container"
		reserved := func(name string) bool {
			return name == paddlev1.ReservedInitContainer || name == paddlev1.ReservedGlooStoreContainer
		}
		for i, c := range rs.Template.Spec.InitContainers {
			if reserved(c.Name) {
				errs = append(errs, field.Invalid(path.Child("initContainers").Index(i).Child("name"), c.Name, renameContainer))
			}
		}
		for i, c := range rs.Template.Spec.Containers {
			if reserved(c.Name) {
				errs = append(errs, field.Invalid(path.Child("containers").Index(i).Child("name"), c.Name, renameContainer))
			}
		}
		for i, v := range rs.Template.Spec.Volumes {
			if v.Name == paddlev1.ReservedVolume {
				errs = append(errs, field.Invalid(path.Child("volumes").Index(i).Child("name"), v.Name, "is reserved for the job's endpoints; rename the volume"))
			}
		}
	})
	return errs
}

// validateEtcdEndpoints refuses an elastic etcd endpoint Paddle's elastic
// launcher cannot dial: it takes one etcd as http://host:port, without TLS.
// (The schema's URL functions cannot see user info, and the list has no
// bound to keep a rule's cost within the API server's budget.)
func validateEtcdEndpoints(spec *paddlev1.PaddleJobSpec) field.ErrorList {
	var errs field.ErrorList
	if p := spec.ElasticPolicy; p != nil {
		for i, e := range p.EtcdEndpoints {
			if msg := invalidEtcdEndpoint(e); msg != "" {
				errs = append(errs, field.Invalid(field.NewPath("spec", "elasticPolicy", "etcdEndpoints").Index(i), e, msg))
			}
		}
	}
	return errs
}

// invalidEtcdEndpoint says what is wrong with an elastic etcd endpoint, or "".
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
		return "the port must be 1-65535: " + want[len("must be "):]
	}
	return ""
}

// validateMinResources refuses what no scheduler can count in
// spec.schedulingPolicy.minResources: a resource name that is not one (cpu,
// memory, nvidia.com/gpu) and a negative quantity. The schema checks only
// how each quantity is spelt.
func validateMinResources(spec *paddlev1.PaddleJobSpec) field.ErrorList {
	p := spec.SchedulingPolicy
	if p == nil {
		return nil
	}
	var errs field.ErrorList
	path := field.NewPath("spec", "schedulingPolicy", "minResources")
	names := make([]string, 0, len(p.MinResources))
	for name := range p.MinResources {
		names = append(names, string(name))
	}
	slices.Sort(names)
	for _, name := range names {
		if msgs := utilvalidation.IsQualifiedName(name); len(msgs) > 0 {
			errs = append(errs, field.Invalid(path.Key(name), name, "not a resource name (cpu, memory, ephemeral-storage, nvidia.com/gpu): "+strings.Join(msgs, "; ")))
			continue
		}
		if q := p.MinResources[corev1.ResourceName(name)]; q.Sign() < 0 {
			errs = append(errs, field.Invalid(path.Key(name), q.String(), "must be greater than or equal to 0"))
		}
	}
	return errs
}
