package node

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
)

// objectSource gives the ConfigMaps and Secrets that environment variables
// and volumes read; a missing object is an apierrors NotFound error.
type objectSource interface {
	ConfigMap(namespace, name string) (*corev1.ConfigMap, error)
	Secret(namespace, name string) (*corev1.Secret, error)
	// ServiceAccountToken is a token of the pod's service account, bound to
	// the pod.
	ServiceAccountToken(pod *corev1.Pod, audience string, expirationSeconds *int64) (string, error)
}

// podAddresses are the addresses the downward API reports for a pod.
type podAddresses struct {
	PodIPs  []string
	HostIPs []string
}

// configError means a container cannot be configured yet, typically because
// an object it references does not exist: the container waits with reason
// CreateContainerConfigError and is retried, as the kubelet does.
type configError struct{ err error }

func (e *configError) Error() string { return e.err.Error() }
func (e *configError) Unwrap() error { return e.err }

func configErrorf(format string, args ...any) error {
	return &configError{err: fmt.Errorf(format, args...)}
}

// envVar is one resolved environment variable.
type envVar struct{ Name, Value string }

// envList is an ordered set of variables where a later value replaces an
// earlier one in place.
type envList struct {
	vars  []envVar
	index map[string]int
}

func (l *envList) set(name, value string) {
	if l.index == nil {
		l.index = map[string]int{}
	}
	if i, ok := l.index[name]; ok {
		l.vars[i].Value = value
		return
	}
	l.index[name] = len(l.vars)
	l.vars = append(l.vars, envVar{Name: name, Value: value})
}

func (l *envList) lookup(name string) (string, bool) {
	i, ok := l.index[name]
	if !ok {
		return "", false
	}
	return l.vars[i].Value, true
}

// strings renders the variables as NAME=value for exec.
func (l *envList) strings() []string {
	out := make([]string, len(l.vars))
	for i, v := range l.vars {
		out[i] = v.Name + "=" + v.Value
	}
	return out
}

// containerEnv resolves a container's envFrom and env as the kubelet does:
// envFrom sources first, then env in order, each value expanded against the
// variables before it.
func containerEnv(pod *corev1.Pod, c *corev1.Container, addrs podAddresses, allocatable corev1.ResourceList, src objectSource) (*envList, error) {
	env := &envList{}
	for _, from := range c.EnvFrom {
		if err := addEnvFrom(env, pod.Namespace, from, src); err != nil {
			return nil, err
		}
	}
	for _, v := range c.Env {
		if v.ValueFrom == nil {
			env.set(v.Name, expandVars(v.Value, env.lookup))
			continue
		}
		value, ok, err := envValueFrom(pod, c, v, addrs, allocatable, src)
		if err != nil {
			return nil, err
		}
		if ok {
			env.set(v.Name, value)
		}
	}
	return env, nil
}

func addEnvFrom(env *envList, namespace string, from corev1.EnvFromSource, src objectSource) error {
	var data map[string]string
	switch {
	case from.ConfigMapRef != nil:
		cm, err := src.ConfigMap(namespace, from.ConfigMapRef.Name)
		if err != nil {
			if apierrors.IsNotFound(err) && isOptional(from.ConfigMapRef.Optional) {
				return nil
			}
			return lookupError(err)
		}
		data = cm.Data
	case from.SecretRef != nil:
		s, err := src.Secret(namespace, from.SecretRef.Name)
		if err != nil {
			if apierrors.IsNotFound(err) && isOptional(from.SecretRef.Optional) {
				return nil
			}
			return lookupError(err)
		}
		data = make(map[string]string, len(s.Data))
		for k, v := range s.Data {
			data[k] = string(v)
		}
	default:
		return nil
	}
	keys := make([]string, 0, len(data))
	for k := range data {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		env.set(from.Prefix+k, data[k])
	}
	return nil
}

// envValueFrom resolves one valueFrom; ok is false when an optional source is
// missing and the variable is left out.
func envValueFrom(pod *corev1.Pod, c *corev1.Container, v corev1.EnvVar, addrs podAddresses, allocatable corev1.ResourceList, src objectSource) (value string, ok bool, err error) {
	from := v.ValueFrom
	switch {
	case from.FieldRef != nil:
		value, err := podFieldValue(pod, from.FieldRef.FieldPath, addrs)
		if err != nil {
			return "", false, configErrorf("env %s: %w", v.Name, err)
		}
		return value, true, nil
	case from.ResourceFieldRef != nil:
		value, err := resourceFieldValue(pod, c.Name, from.ResourceFieldRef, allocatable)
		if err != nil {
			return "", false, configErrorf("env %s: %w", v.Name, err)
		}
		return value, true, nil
	case from.ConfigMapKeyRef != nil:
		ref := from.ConfigMapKeyRef
		cm, err := src.ConfigMap(pod.Namespace, ref.Name)
		if err != nil {
			if apierrors.IsNotFound(err) && isOptional(ref.Optional) {
				return "", false, nil
			}
			return "", false, lookupError(err)
		}
		if value, found := cm.Data[ref.Key]; found {
			return value, true, nil
		}
		if isOptional(ref.Optional) {
			return "", false, nil
		}
		return "", false, configErrorf("couldn't find key %s in ConfigMap %s/%s", ref.Key, pod.Namespace, ref.Name)
	case from.SecretKeyRef != nil:
		ref := from.SecretKeyRef
		s, err := src.Secret(pod.Namespace, ref.Name)
		if err != nil {
			if apierrors.IsNotFound(err) && isOptional(ref.Optional) {
				return "", false, nil
			}
			return "", false, lookupError(err)
		}
		if value, found := s.Data[ref.Key]; found {
			return string(value), true, nil
		}
		if isOptional(ref.Optional) {
			return "", false, nil
		}
		return "", false, configErrorf("couldn't find key %s in Secret %s/%s", ref.Key, pod.Namespace, ref.Name)
	}
	return "", false, configErrorf("env %s: valueFrom has no source this node supports", v.Name)
}

// lookupError turns a failed ConfigMap or Secret lookup into a configError,
// so the container waits and is retried.
func lookupError(err error) error {
	var ce *configError
	if errors.As(err, &ce) {
		return err
	}
	return &configError{err: err}
}

func isOptional(optional *bool) bool { return optional != nil && *optional }

// podFieldValue is the value of a downward API field path.
func podFieldValue(pod *corev1.Pod, path string, addrs podAddresses) (string, error) {
	if key, ok := subscript(path, "metadata.labels"); ok {
		return pod.Labels[key], nil
	}
	if key, ok := subscript(path, "metadata.annotations"); ok {
		return pod.Annotations[key], nil
	}
	switch path {
	case "metadata.name":
		return pod.Name, nil
	case "metadata.namespace":
		return pod.Namespace, nil
	case "metadata.uid":
		return string(pod.UID), nil
	case "metadata.labels":
		return formatMap(pod.Labels), nil
	case "metadata.annotations":
		return formatMap(pod.Annotations), nil
	case "spec.nodeName":
		return pod.Spec.NodeName, nil
	case "spec.serviceAccountName":
		return pod.Spec.ServiceAccountName, nil
	case "status.podIP":
		return first(addrs.PodIPs), nil
	case "status.podIPs":
		return strings.Join(addrs.PodIPs, ","), nil
	case "status.hostIP":
		return first(addrs.HostIPs), nil
	case "status.hostIPs":
		return strings.Join(addrs.HostIPs, ","), nil
	}
	return "", fmt.Errorf("unsupported field path %q", path)
}

// subscript parses "<field>['key']".
func subscript(path, field string) (string, bool) {
	rest, ok := strings.CutPrefix(path, field+"['")
	if !ok {
		return "", false
	}
	return strings.CutSuffix(rest, "']")
}

// formatMap renders labels or annotations as the downward API does: sorted
// key="value" lines.
func formatMap(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	lines := make([]string, len(keys))
	for i, k := range keys {
		lines[i] = fmt.Sprintf("%s=%q", k, m[k])
	}
	return strings.Join(lines, "\n")
}

func first(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return s[0]
}

// resourceFieldValue is the value of a resourceFieldRef of containerName
// (the default when the ref names none). Unset limits report the node's
// allocatable amount, as on a kubelet.
func resourceFieldValue(pod *corev1.Pod, containerName string, ref *corev1.ResourceFieldSelector, allocatable corev1.ResourceList) (string, error) {
	if ref.ContainerName != "" {
		containerName = ref.ContainerName
	}
	c := findContainer(&pod.Spec, containerName)
	if c == nil {
		return "", fmt.Errorf("resourceFieldRef: no container %q in the pod", containerName)
	}
	kind, name, ok := strings.Cut(ref.Resource, ".")
	if !ok || (kind != "limits" && kind != "requests") {
		return "", fmt.Errorf("unsupported resource %q", ref.Resource)
	}
	rn := corev1.ResourceName(name)
	var q resource.Quantity
	if kind == "limits" {
		q, ok = c.Resources.Limits[rn]
		if !ok {
			q = allocatable[rn]
		}
	} else {
		q = c.Resources.Requests[rn]
	}
	divisor := ref.Divisor
	if divisor.IsZero() {
		divisor = resource.MustParse("1")
	}
	if rn == corev1.ResourceCPU {
		return fmt.Sprint(int64(math.Ceil(float64(q.MilliValue()) / float64(divisor.MilliValue())))), nil
	}
	return fmt.Sprint(int64(math.Ceil(float64(q.Value()) / float64(divisor.Value())))), nil
}

func findContainer(spec *corev1.PodSpec, name string) *corev1.Container {
	for i := range spec.InitContainers {
		if spec.InitContainers[i].Name == name {
			return &spec.InitContainers[i]
		}
	}
	for i := range spec.Containers {
		if spec.Containers[i].Name == name {
			return &spec.Containers[i]
		}
	}
	return nil
}

// expandVars expands $(NAME) references as Kubernetes does in env values,
// commands and args: a defined NAME is replaced, an undefined one is kept as
// written, "$$" is a literal "$", and any other "$" stays as it is.
func expandVars(s string, lookup func(string) (string, bool)) string {
	if !strings.Contains(s, "$") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i++
		case '(':
			end := strings.IndexByte(s[i+2:], ')')
			if end < 0 {
				b.WriteString("$(")
				i++
				continue
			}
			name := s[i+2 : i+2+end]
			if value, ok := lookup(name); ok {
				b.WriteString(value)
			} else {
				b.WriteString("$(" + name + ")")
			}
			i += 2 + end
		default:
			b.WriteByte('$')
		}
	}
	return b.String()
}
