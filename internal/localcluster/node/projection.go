package node

import (
	"crypto/sha256"
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// defaultFileMode is the API's default mode for projected files (0644).
const defaultFileMode int32 = 0o644

// isProjection reports whether the node materializes a volume's content as
// files, refreshing them while the pod runs.
func isProjection(v *corev1.Volume) bool {
	return v.ConfigMap != nil || v.Secret != nil || v.DownwardAPI != nil || v.Projected != nil
}

// projectionPayload computes the files of a configMap, secret, downwardAPI or
// projected volume. Warnings name sources the node skips.
func projectionPayload(pod *corev1.Pod, v *corev1.Volume, src objectSource, allocatable corev1.ResourceList) (files map[string]projectedFile, warnings []string, err error) {
	files = map[string]projectedFile{}
	switch {
	case v.ConfigMap != nil:
		s := v.ConfigMap
		err = addConfigMapFiles(files, pod.Namespace, s.Name, s.Items, s.Optional, modeOr(s.DefaultMode, defaultFileMode), src)
	case v.Secret != nil:
		s := v.Secret
		err = addSecretFiles(files, pod.Namespace, s.SecretName, s.Items, s.Optional, modeOr(s.DefaultMode, defaultFileMode), src)
	case v.DownwardAPI != nil:
		err = addDownwardAPIFiles(files, pod, v.DownwardAPI.Items, modeOr(v.DownwardAPI.DefaultMode, defaultFileMode), allocatable)
	case v.Projected != nil:
		mode := modeOr(v.Projected.DefaultMode, defaultFileMode)
		for _, p := range v.Projected.Sources {
			switch {
			case p.ConfigMap != nil:
				err = addConfigMapFiles(files, pod.Namespace, p.ConfigMap.Name, p.ConfigMap.Items, p.ConfigMap.Optional, mode, src)
			case p.Secret != nil:
				err = addSecretFiles(files, pod.Namespace, p.Secret.Name, p.Secret.Items, p.Secret.Optional, mode, src)
			case p.DownwardAPI != nil:
				err = addDownwardAPIFiles(files, pod, p.DownwardAPI.Items, mode, allocatable)
			case p.ServiceAccountToken != nil:
				var token string
				if token, err = src.ServiceAccountToken(pod, p.ServiceAccountToken.Audience, p.ServiceAccountToken.ExpirationSeconds); err == nil {
					files[p.ServiceAccountToken.Path] = projectedFile{Data: []byte(token), Mode: mode}
				}
			default:
				warnings = append(warnings, fmt.Sprintf("volume %q: a projection source the paddlejob node does not support was skipped", v.Name))
			}
			if err != nil {
				break
			}
		}
	default:
		err = fmt.Errorf("volume %q is not a projection", v.Name)
	}
	if err != nil {
		return nil, warnings, err
	}
	return files, warnings, nil
}

func addConfigMapFiles(files map[string]projectedFile, ns, name string, items []corev1.KeyToPath, optional *bool, mode int32, src objectSource) error {
	cm, err := src.ConfigMap(ns, name)
	if err != nil {
		if apierrors.IsNotFound(err) && isOptional(optional) {
			return nil // an optional ConfigMap that does not exist yet leaves no files
		}
		return err
	}
	data := make(map[string][]byte, len(cm.Data)+len(cm.BinaryData))
	for k, v := range cm.Data {
		data[k] = []byte(v)
	}
	for k, v := range cm.BinaryData {
		data[k] = v
	}
	return addKeyFiles(files, "configmap", data, items, optional, mode)
}

func addSecretFiles(files map[string]projectedFile, ns, name string, items []corev1.KeyToPath, optional *bool, mode int32, src objectSource) error {
	s, err := src.Secret(ns, name)
	if err != nil {
		if apierrors.IsNotFound(err) && isOptional(optional) {
			return nil
		}
		return err
	}
	return addKeyFiles(files, "secret", s.Data, items, optional, mode)
}

// addKeyFiles maps keys to files: every key under its own name, or only the
// listed items at their paths.
func addKeyFiles(files map[string]projectedFile, kind string, data map[string][]byte, items []corev1.KeyToPath, optional *bool, mode int32) error {
	if len(items) == 0 {
		for k, v := range data {
			files[k] = projectedFile{Data: v, Mode: mode}
		}
		return nil
	}
	for _, it := range items {
		v, ok := data[it.Key]
		if !ok {
			if isOptional(optional) {
				continue
			}
			return fmt.Errorf("%s references non-existent key: %s", kind, it.Key)
		}
		files[it.Path] = projectedFile{Data: v, Mode: modeOr(it.Mode, mode)}
	}
	return nil
}

func addDownwardAPIFiles(files map[string]projectedFile, pod *corev1.Pod, items []corev1.DownwardAPIVolumeFile, mode int32, allocatable corev1.ResourceList) error {
	for _, it := range items {
		var value string
		var err error
		switch {
		case it.FieldRef != nil:
			value, err = podFieldValue(pod, it.FieldRef.FieldPath, podAddresses{})
		case it.ResourceFieldRef != nil:
			value, err = resourceFieldValue(pod, "", it.ResourceFieldRef, allocatable)
		default:
			err = fmt.Errorf("downwardAPI item %q has no source", it.Path)
		}
		if err != nil {
			return fmt.Errorf("downwardAPI item %q: %w", it.Path, err)
		}
		files[it.Path] = projectedFile{Data: []byte(value), Mode: modeOr(it.Mode, mode)}
	}
	return nil
}

func modeOr(mode *int32, def int32) int32 {
	if mode != nil {
		return *mode
	}
	return def
}

// payloadDigest identifies a payload, so an unchanged one is not rewritten.
func payloadDigest(files map[string]projectedFile) [sha256.Size]byte {
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	h := sha256.New()
	for _, p := range paths {
		f := files[p]
		fmt.Fprintf(h, "%s\x00%o\x00%d\x00", p, f.Mode, len(f.Data))
		h.Write(f.Data)
	}
	var sum [sha256.Size]byte
	copy(sum[:], h.Sum(nil))
	return sum
}
