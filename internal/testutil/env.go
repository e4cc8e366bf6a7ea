package testutil

import (
	"fmt"
	"regexp"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// ResolveEnv resolves a container's environment the way a kubelet does for the
// sources the operator uses: literal values with $(VAR) expansion, fieldRefs
// of the pod, and configMapKeyRefs from configMaps (name → data). It returns
// an error for a reference it cannot resolve, as a kubelet would refuse to
// start the container.
func ResolveEnv(pod *corev1.Pod, c *corev1.Container, configMaps map[string]map[string]string) (map[string]string, error) {
	env := map[string]string{}
	for _, e := range c.Env {
		switch {
		case e.ValueFrom == nil:
			env[e.Name] = expand(e.Value, env)
		case e.ValueFrom.FieldRef != nil:
			v, err := fieldValue(pod, e.ValueFrom.FieldRef.FieldPath)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", e.Name, err)
			}
			env[e.Name] = v
		case e.ValueFrom.ConfigMapKeyRef != nil:
			ref := e.ValueFrom.ConfigMapKeyRef
			data, ok := configMaps[ref.Name]
			if !ok {
				return nil, fmt.Errorf("%s: configmap %q not found", e.Name, ref.Name)
			}
			v, ok := data[ref.Key]
			switch {
			case ok:
				env[e.Name] = v
			case ref.Optional == nil || !*ref.Optional:
				return nil, fmt.Errorf("%s: key %q not found in configmap %q", e.Name, ref.Key, ref.Name)
			}
		default:
			return nil, fmt.Errorf("%s: unsupported source", e.Name)
		}
	}
	return env, nil
}

var varRef = regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)

func expand(s string, env map[string]string) string {
	return varRef.ReplaceAllStringFunc(s, func(m string) string {
		if v, ok := env[m[2:len(m)-1]]; ok {
			return v
		}
		return m
	})
}

func fieldValue(pod *corev1.Pod, path string) (string, error) {
	switch {
	case path == "status.podIP":
		return pod.Status.PodIP, nil
	case path == "metadata.name":
		return pod.Name, nil
	case path == "metadata.namespace":
		return pod.Namespace, nil
	case strings.HasPrefix(path, "metadata.annotations['"):
		return pod.Annotations[strings.TrimSuffix(strings.TrimPrefix(path, "metadata.annotations['"), "']")], nil
	}
	return "", fmt.Errorf("unsupported fieldRef %q", path)
}
