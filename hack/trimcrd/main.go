// Command trimcrd removes the descriptions inside the pod templates of a
// generated CRD, in place.
//
// Each role embeds a whole PodTemplateSpec; with Kubernetes' own field docs
// the PaddleJob CRD is about 1.9 MB, too large for a client-side
// `kubectl apply` and heavy for every API server that serves it. The docs of
// those fields are Kubernetes' (`kubectl explain pod.spec`); PaddleJob's own
// fields keep theirs.
package main

import (
	"fmt"
	"os"

	"sigs.k8s.io/yaml"
)

func main() {
	for _, path := range os.Args[1:] {
		if err := trim(path); err != nil {
			fmt.Fprintln(os.Stderr, "trimcrd:", err)
			os.Exit(1)
		}
	}
}

func trim(path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var crd map[string]any
	if err := yaml.Unmarshal(data, &crd); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	walk(crd, false)
	out, err := yaml.Marshal(crd)
	if err != nil {
		return err
	}
	return os.WriteFile(path, append([]byte("---\n"), out...), 0o644)
}

// walk deletes descriptions below any "template" property's own schema.
func walk(node any, inTemplate bool) {
	switch n := node.(type) {
	case map[string]any:
		if inTemplate {
			delete(n, "description")
		}
		for key, child := range n {
			if props, ok := child.(map[string]any); ok && key == "properties" {
				for name, prop := range props {
					if name == "template" {
						if m, ok := prop.(map[string]any); ok {
							for k, v := range m {
								if k != "description" {
									walk(v, true)
								}
							}
						}
						continue
					}
					walk(prop, inTemplate)
				}
				continue
			}
			walk(child, inTemplate)
		}
	case []any:
		for _, child := range n {
			walk(child, inTemplate)
		}
	}
}
