package main

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/listtype"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/objectmeta"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metavalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"sigs.k8s.io/yaml"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/config"
	"github.com/paddlejob/paddlejob/internal/operator/controller"
	opprogress "github.com/paddlejob/paddlejob/internal/operator/progress"
	"github.com/paddlejob/paddlejob/internal/operator/webhook"
	"github.com/paddlejob/paddlejob/pkg/client"
)

func init() { register(newValidateCmd) }

const validateLong = `Check each PaddleJob of a manifest, offline, as creating it would: the CRD's schema
(unknown fields, types, enums, bounds and its validation rules) as the API server
checks it, then the operator's admission webhook (the same code, so the same messages),
then each container's image reference. Warnings go to stderr. Exits 0 when every job is
valid, 1 otherwise.

Offline, the pods' templates are not checked as the API server checks pods (the
webhook does that with a dry run on a cluster): --server sends the manifest's jobs to
the cluster as a server-side dry run (nothing is stored), with the operator's webhook.

--build-context DIR (or IMAGE=DIR, as for run) also reads the Python programs of the
image's build context, and warns when they and the job's mode disagree: a collective
program (fleet.init(is_collective=True), init_parallel_env) in a job with spec.ps, or a
parameter-server program (fleet.init_server, run_server) in a job without.`

func newValidateCmd() *cobra.Command {
	var t targetFlags
	var file string
	var server bool
	var buildContexts []string
	cmd := &cobra.Command{
		Use:   "validate -f job.yaml",
		Short: "Check the PaddleJobs of a manifest as the API server and the operator's webhook would, without a cluster",
		Long:  validateLong,
		Example: `  paddlejob validate -f job.yaml
  paddlejob validate -f job.yaml --build-context .   # also: does the program fit the job's mode?
  paddlejob validate -f job.yaml --server   # a dry run on the current context's cluster`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			objs, err := readManifests(cmd, file)
			if err != nil {
				return err
			}
			var c *client.Client
			if server {
				if c, err = t.client(cmd); err != nil {
					return err
				}
			}
			out, errOut := cmd.OutOrStdout(), cmd.ErrOrStderr()
			jobs, invalid := 0, 0
			for _, o := range objs {
				if o.GetKind() != "PaddleJob" || o.GroupVersionKind().Group != paddlev1.GroupVersion.Group {
					continue
				}
				jobs++
				var warnings []string
				if server {
					err = c.DryRun(cmd.Context(), o, t.ns())
				} else {
					warnings, err = validateOffline(cmd.Context(), o)
				}
				if err == nil && len(buildContexts) > 0 {
					more, cerr := programWarnings(buildContexts, o)
					if cerr != nil {
						return cerr
					}
					warnings = append(warnings, more...)
				}
				for _, w := range warnings {
					fmt.Fprintf(errOut, "Warning: %s\n", w)
				}
				if err != nil {
					invalid++
					fmt.Fprintf(out, "%s: %v\n", file, err)
					continue
				}
				how := "offline: the schema, the webhook's rules and the images"
				if server {
					how = "by a server-side dry run in " + t.where()
				}
				fmt.Fprintf(out, "%s: PaddleJob %s is valid (checked %s)\n", file, o.GetName(), how)
			}
			switch {
			case jobs == 0:
				return fmt.Errorf("%s holds no PaddleJob (apiVersion %s, kind PaddleJob)", file, paddlev1.GroupVersion)
			case invalid > 0:
				return exitError{code: 1}
			}
			return nil
		},
	}
	t.bind(cmd)
	cmd.Flags().StringVarP(&file, "filename", "f", "", "manifest with PaddleJobs (- for stdin); other objects are skipped")
	cmd.Flags().BoolVar(&server, "server", false, "validate on the cluster (a server-side dry run) instead of offline")
	cmd.Flags().StringArrayVar(&buildContexts, "build-context", nil, "a build context of the job's image (DIR, or IMAGE=DIR; may be repeated): warn when its programs and the job's mode disagree")
	_ = cmd.MarkFlagRequired("filename")
	return cmd
}

// validateOffline checks a PaddleJob as creating it would: the API
// server's checks against the CRD (strict field validation, defaults, the
// schema, its CEL rules), then the operator's webhook (defaulting and
// ValidateCreate, without the pods' dry run that needs a cluster), then the
// image references, which nothing on the server checks.
func validateOffline(ctx context.Context, o *unstructured.Unstructured) ([]string, error) {
	s, err := paddleJobSchema()
	if err != nil {
		return nil, err
	}
	gk := paddlev1.GroupVersion.WithKind("PaddleJob").GroupKind()
	obj := o.DeepCopy().UnstructuredContent()
	// Strict field validation, as kubectl asks for: unknown fields are errors.
	if unknown := pruning.PruneWithOptions(obj, s.structural, true, structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: true}); len(unknown) > 0 {
		sort.Strings(unknown)
		var msgs []string
		for _, p := range unknown {
			msgs = append(msgs, fmt.Sprintf("unknown field %q", p))
		}
		return nil, apierrors.NewBadRequest(fmt.Sprintf("PaddleJob %q: strict decoding error: %s", o.GetName(), strings.Join(msgs, ", ")))
	}
	defaulting.Default(obj, s.structural)
	u := &unstructured.Unstructured{Object: obj}
	if u.GetNamespace() == "" {
		u.SetNamespace("default") // the namespace it would go to is checked on the cluster
	}
	errs := metavalidation.ValidateObjectMetaAccessor(u, true, metavalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	errs = append(errs, validation.ValidateCustomResource(nil, obj, s.validator)...)
	errs = append(errs, objectmeta.Validate(nil, obj, s.structural, false)...)
	errs = append(errs, listtype.ValidateListSetsAndMaps(nil, s.structural, obj)...)
	// The API server runs the CEL rules only on an object the schema
	// found no type, enum, size or required-field error in, and says so.
	if blocksRules(errs) {
		errs = append(errs, field.Invalid(nil, nil, "some validation rules were not checked because the object was invalid; correct the existing errors to complete validation"))
	} else {
		celErrs, _ := s.cel.Validate(ctx, nil, s.structural, obj, nil, celconfig.RuntimeCELCostBudget)
		errs = append(errs, celErrs...)
	}
	if len(errs) > 0 {
		return nil, apierrors.NewInvalid(gk, o.GetName(), errs)
	}
	job := &paddlev1.PaddleJob{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj, job); err != nil {
		return nil, fmt.Errorf("PaddleJob %q: %w", o.GetName(), err)
	}
	// The webhook of an operator installed as config/ and the chart install
	// it: default settings, progress reports on.
	opts := controller.DefaultOptions()
	opts.Progress.Store = &opprogress.Store{}
	hook := &webhook.PaddleJobWebhook{Validator: controller.NewValidator(opts)}
	if err := hook.Default(ctx, job); err != nil {
		return nil, err
	}
	warnings, err := hook.ValidateCreate(ctx, job)
	if err != nil {
		return warnings, fmt.Errorf("admission webhook %q denied the request: %w", "vpaddlejob.batch.paddlepaddle.org", err)
	}
	if errs := validateImages(job); len(errs) > 0 {
		return warnings, apierrors.NewInvalid(gk, o.GetName(), errs)
	}
	return warnings, nil
}

// blocksRules reports whether a schema error keeps the API server from
// evaluating the CRD's CEL rules: an unsupported enum value, a missing
// required field, a value too long or with too many items, a wrong type.
func blocksRules(errs field.ErrorList) bool {
	for _, e := range errs {
		switch e.Type {
		case field.ErrorTypeNotSupported, field.ErrorTypeRequired, field.ErrorTypeTooLong, field.ErrorTypeTooMany, field.ErrorTypeTypeInvalid:
			return true
		}
	}
	return false
}

// validateImages checks every container's image reference, which the API
// server stores as it is and a kubelet then fails to pull (InvalidImageName).
func validateImages(job *paddlev1.PaddleJob) field.ErrorList {
	var errs field.ErrorList
	for _, rt := range paddlev1.ReplicaTypes {
		rs := job.Spec.Replicas(rt)
		if rs == nil {
			continue
		}
		path := field.NewPath("spec", string(rt), "template", "spec")
		for kind, containers := range map[string][]corev1.Container{"initContainers": rs.Template.Spec.InitContainers, "containers": rs.Template.Spec.Containers} {
			for i, c := range containers {
				if err := client.ValidateImage(c.Image); err != nil {
					errs = append(errs, field.Invalid(path.Child(kind).Index(i).Child("image"), c.Image, err.Error()))
				}
			}
		}
	}
	sort.Slice(errs, func(i, j int) bool { return errs[i].Field < errs[j].Field })
	return errs
}

// crdSchema is the PaddleJob CRD's schema, as the API server uses it.
type crdSchema struct {
	structural *structuralschema.Structural
	validator  validation.SchemaValidator
	cel        *cel.Validator
}

var paddleJobSchema = sync.OnceValues(func() (*crdSchema, error) {
	data, err := config.Manifests.ReadFile(config.CRDFile)
	if err != nil {
		return nil, err
	}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.UnmarshalStrict(data, &crd); err != nil {
		return nil, fmt.Errorf("the embedded CRD: %w", err)
	}
	for _, v := range crd.Spec.Versions {
		if v.Name != paddlev1.GroupVersion.Version || v.Schema == nil {
			continue
		}
		var props apiextensions.JSONSchemaProps
		if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(v.Schema.OpenAPIV3Schema, &props, nil); err != nil {
			return nil, err
		}
		s, err := structuralschema.NewStructural(&props)
		if err != nil {
			return nil, err
		}
		validator, _, err := validation.NewSchemaValidator(&props)
		if err != nil {
			return nil, err
		}
		return &crdSchema{structural: s, validator: validator, cel: cel.NewValidator(s, true, celconfig.PerCallLimit)}, nil
	}
	return nil, errors.New("the embedded CRD has no schema for " + paddlev1.GroupVersion.String())
})
