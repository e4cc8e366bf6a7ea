package kube

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/yaml"
)

// FieldManager names this project's writes in managedFields.
const FieldManager = "paddlejob"

// DecodeManifests splits YAML or JSON documents into objects, skipping empty
// documents.
func DecodeManifests(data []byte) ([]*unstructured.Unstructured, error) {
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var out []*unstructured.Unstructured
	for i := 1; ; i++ {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		obj := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(doc, &obj.Object); err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		if len(obj.Object) == 0 {
			continue
		}
		if obj.GetKind() == "" || obj.GetAPIVersion() == "" {
			return nil, fmt.Errorf("document %d has no apiVersion and kind", i)
		}
		out = append(out, obj)
	}
}

// Applier writes arbitrary objects through the dynamic client.
type Applier struct {
	dyn    dynamic.Interface
	mapper *restmapper.DeferredDiscoveryRESTMapper
}

// NewApplier builds an Applier for a cluster.
func NewApplier(cfg *rest.Config) (*Applier, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &Applier{dyn: dyn, mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))}, nil
}

// resource resolves an object's resource, refreshing discovery once in case
// the kind was installed a moment ago (a CRD applied just before).
func (a *Applier) resource(obj *unstructured.Unstructured, defaultNamespace string) (dynamic.ResourceInterface, error) {
	gvk := obj.GroupVersionKind()
	m, err := a.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if meta.IsNoMatchError(err) {
		a.mapper.Reset()
		m, err = a.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	}
	if err != nil {
		return nil, fmt.Errorf("%s %s: the cluster does not serve this kind: %w", gvk.Kind, obj.GetName(), err)
	}
	if m.Scope.Name() != meta.RESTScopeNameNamespace {
		return a.dyn.Resource(m.Resource), nil
	}
	ns := obj.GetNamespace()
	if ns == "" {
		ns = defaultNamespace
		obj.SetNamespace(ns)
	}
	return a.dyn.Resource(m.Resource).Namespace(ns), nil
}

// Apply server-side applies obj, taking ownership of its fields.
func (a *Applier) Apply(ctx context.Context, obj *unstructured.Unstructured, defaultNamespace string) error {
	ri, err := a.resource(obj, defaultNamespace)
	if err != nil {
		return err
	}
	if _, err := ri.Apply(ctx, obj.GetName(), obj, metav1.ApplyOptions{FieldManager: FieldManager, Force: true}); err != nil {
		return fmt.Errorf("applying %s %s: %w", obj.GetKind(), obj.GetName(), err)
	}
	return nil
}

// Create creates obj with strict field validation, so a misspelled field is
// an error rather than silently dropped.
func (a *Applier) Create(ctx context.Context, obj *unstructured.Unstructured, defaultNamespace string) (*unstructured.Unstructured, error) {
	ri, err := a.resource(obj, defaultNamespace)
	if err != nil {
		return nil, err
	}
	created, err := ri.Create(ctx, obj, metav1.CreateOptions{FieldManager: FieldManager, FieldValidation: "Strict"})
	if err != nil {
		return nil, fmt.Errorf("creating %s %s: %w", obj.GetKind(), obj.GetName(), err)
	}
	return created, nil
}

// Delete deletes obj (foreground), ignoring an absent one.
func (a *Applier) Delete(ctx context.Context, obj *unstructured.Unstructured, defaultNamespace string) error {
	ri, err := a.resource(obj, defaultNamespace)
	if err != nil {
		return err
	}
	policy := metav1.DeletePropagationForeground
	err = ri.Delete(ctx, obj.GetName(), metav1.DeleteOptions{PropagationPolicy: &policy})
	if err != nil && !isNotFound(err) {
		return fmt.Errorf("deleting %s %s: %w", obj.GetKind(), obj.GetName(), err)
	}
	return nil
}
