package main

import (
	"context"
	"errors"
	"fmt"
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
	metavalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"sigs.k8s.io/yaml"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/config"
	"github.com/paddlejob/paddlejob/internal/operator/podcontract"
	opvalidation "github.com/paddlejob/paddlejob/internal/operator/validation"
	"github.com/paddlejob/paddlejob/internal/operator/webhook"
	"github.com/paddlejob/paddlejob/pkg/client"
)

func init() { register(newValidateCmd) }

const validateLong = `Check each PaddleJob of a manifest, offline, as creating it would: the CRD's schema
(unknown fields, types, enums, bounds and its validation rules) as the API server
checks it, the operator's admission webhook (the same code, so the same messages),
and each container's image reference. All three run on every job, so one run lists
every problem of the file.

A valid job is one line, FILE: PaddleJob NAME is valid. An invalid one is a line
FILE: PaddleJob NAME is invalid, with its count of problems of each kind, then one
line per problem:

  paddlejob/NAME: FIELD: WHAT IS WRONG

FIELD is the field's path as the API server writes it (spec.worker.replicas,
spec.worker.template.spec.containers[0].image); a job without a name is
paddlejob #N, the Nth PaddleJob of the file. The jobs come in the file's order; a
job's problems by kind (schema, webhook, image), then by field path, the same on
every run. What could not be checked (a schema error that leaves no PaddleJob to
give the webhook, the CRD's rules the API server skips while the schema finds
errors) is a Note on stderr; the webhook's warnings go to stderr too. Exits 0 when
every job is valid, 1 otherwise.

Offline, the webhook's checks run under the operator's default settings (no etcd
for elastic jobs, progress reports on, Volcano as the gang scheduler), which some of
its warnings depend on: a Note on stderr says which it assumed. Nor are the pods'
templates checked as the API server checks pods (the webhook does that with a dry
run on a cluster): --server sends the manifest's jobs to
the cluster as a server-side dry run (nothing is stored), with the operator's webhook,
and lists the problems it refuses a job for in the same lines (the cluster stops at
the first kind that fails, and checks no image references).

--build-context DIR (or IMAGE=DIR, as for run) also reads the Python programs of the
image's build context, and warns when they and the job's mode disagree: a collective
program (fleet.init(is_collective=True), init_parallel_env) in a job with spec.ps, or a
parameter-server program (fleet.init_server, run_server) in a job without.`

// validateFlags are validate's flags.
type validateFlags struct {
	target        targetFlags
	file          string
	server        bool
	buildContexts []string
}

func newValidateCmd() *cobra.Command {
	var f validateFlags
	cmd := &cobra.Command{
		Use:   "validate -f job.yaml",
		Short: "Check the PaddleJobs of a manifest as the API server and the operator's webhook would, without a cluster",
		Long:  validateLong,
		Example: `  paddlejob validate -f job.yaml
  paddlejob validate -f job.yaml --build-context .   # also: does the program fit the job's mode?
  paddlejob validate -f job.yaml --server   # a dry run on the current context's cluster`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return f.run(cmd) },
	}
	f.target.bind(cmd)
	cmd.Flags().StringVarP(&f.file, "filename", "f", "", "manifest with PaddleJobs (- for stdin); other objects are skipped")
	cmd.Flags().BoolVar(&f.server, "server", false, "validate on the cluster (a server-side dry run) instead of offline")
	cmd.Flags().StringArrayVar(&f.buildContexts, "build-context", nil, "a build context of the job's image (DIR, or IMAGE=DIR; may be repeated): warn when its programs and the job's mode disagree")
	_ = cmd.MarkFlagRequired("filename")
	return cmd
}

// run validates every PaddleJob of the manifest and prints what it found.
func (f *validateFlags) run(cmd *cobra.Command) error {
	objs, err := readManifests(cmd, f.file)
	if err != nil {
		return err
	}
	var c *client.Client
	if f.server {
		if c, err = f.target.client(cmd); err != nil {
			return err
		}
	}
	out, errOut := cmd.OutOrStdout(), cmd.ErrOrStderr()
	if !f.server {
		fmt.Fprintln(errOut, assumedSettings(offlineSettings))
	}
	jobs, invalid := 0, 0
	for _, o := range objs {
		if o.GetKind() != "PaddleJob" || o.GroupVersionKind().Group != paddlev1.GroupVersion.Group {
			continue
		}
		jobs++
		var r *jobReport
		if f.server {
			r, err = serverReport(c.DryRun(cmd.Context(), o, f.target.ns()))
		} else {
			r, err = validateOffline(cmd.Context(), o)
		}
		if err != nil {
			return err
		}
		r.name = jobName(o, jobs)
		if len(r.problems) == 0 && len(f.buildContexts) > 0 {
			more, err := programWarnings(f.buildContexts, o)
			if err != nil {
				return err
			}
			r.warnings = append(r.warnings, more...)
		}
		if !r.print(out, errOut, f.file) {
			invalid++
			continue
		}
		how := "offline: the schema, the webhook's rules and the images"
		if f.server {
			how = "by a server-side dry run in " + f.target.where()
		}
		fmt.Fprintf(out, "%s: PaddleJob %s is valid (checked %s)\n", f.file, r.name, how)
	}
	switch {
	case jobs == 0:
		return fmt.Errorf("%s holds no PaddleJob (apiVersion %s, kind PaddleJob)", f.file, paddlev1.GroupVersion)
	case invalid > 0:
		return exitError{code: 1}
	}
	return nil
}

// validateOffline checks a PaddleJob as creating it would: the API
// server's checks against the CRD (strict field validation, defaults, the
// schema, its CEL rules), the operator's webhook (defaulting and
// ValidateCreate, without the pods' dry run that needs a cluster), and the
// image references, which nothing on the server checks. Unlike the server
// it goes on past a kind of check that fails, so that one run finds all.
func validateOffline(ctx context.Context, o *unstructured.Unstructured) (*jobReport, error) {
	s, err := paddleJobSchema()
	if err != nil {
		return nil, err
	}
	r := &jobReport{}
	obj, err := asCreated(o)
	if err != nil {
		return nil, err
	}
	// Strict field validation, as kubectl asks for: unknown fields are
	// errors. Pruned, the rest of the object is checked still.
	for _, p := range pruning.PruneWithOptions(obj, s.structural, true, structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: true}) {
		r.add(checkSchema, p, fmt.Sprintf("unknown field %q", p))
	}
	defaulting.Default(obj, s.structural)
	r.addErrors(checkSchema, schemaErrors(ctx, s, obj))
	job := &paddlev1.PaddleJob{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj, job); err != nil {
		r.notes = append(r.notes, "not checked by the operator's webhook nor for image references: the schema's errors leave no PaddleJob to check ("+err.Error()+")")
		return r, nil
	}
	warnings, err := admit(ctx, job, offlineSettings)
	r.warnings = warnings
	if err := r.addRefusal(checkWebhook, err); err != nil {
		return nil, err
	}
	r.addErrors(checkImage, validateImages(job))
	return r, nil
}

// asCreated is the object as the API server validates it: its numbers
// decoded from JSON, whole ones as integers (the CEL rules compare them with
// integers, and refuse a float), and its name generated from generateName.
func asCreated(o *unstructured.Unstructured) (map[string]any, error) {
	data, err := o.MarshalJSON()
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(data); err != nil {
		return nil, err
	}
	if base := u.GetGenerateName(); u.GetName() == "" && base != "" {
		// As the API server's generator names it, with a suffix that is
		// the same on every run: five characters after at most 58.
		u.SetName(base[:min(len(base), 58)] + "xxxxx")
	}
	return u.Object, nil
}

// schemaErrors are the API server's checks of a custom resource against
// its CRD: the object's metadata, the schema, its list types and CEL rules.
func schemaErrors(ctx context.Context, s *crdSchema, obj map[string]any) field.ErrorList {
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
		return append(errs, field.Invalid(nil, nil, rulesSkipped))
	}
	celErrs, _ := s.cel.Validate(ctx, nil, s.structural, obj, nil, celconfig.RuntimeCELCostBudget)
	return append(errs, celErrs...)
}

// offlineSettings are the operator settings offline validation assumes:
// those of the operator config/ and the chart install with their defaults.
// Some checks depend on them (a warning for an elastic job without etcd, for
// a schedulingPolicy no gang scheduler reads, for a progress deadline no
// report can meet); --server checks under the cluster's own.
var offlineSettings = opvalidation.DefaultSettings()

// assumedSettings is the line that says which operator settings offline
// validation assumed.
func assumedSettings(s opvalidation.Settings) string {
	yesNo := func(on bool, yes, no string) string {
		if on {
			return yes
		}
		return no
	}
	gang := s.Gang.Default
	if gang == "" || gang == podcontract.GangNone {
		gang = "none"
	}
	plugins := s.Gang.SchedulerPluginsName
	if plugins == "" {
		plugins = podcontract.DefaultSchedulerPluginsName
	}
	return fmt.Sprintf("Note: assumed the operator's default settings (--server checks under the cluster's own): %s, %s, default gang scheduler %s (templates may name %s or %s), %s",
		yesNo(s.ElasticEtcd, "an etcd for elastic jobs", "no etcd for elastic jobs"),
		yesNo(s.ProgressReports, "progress reports on", "progress reports off"),
		gang, podcontract.VolcanoSchedulerName, plugins,
		yesNo(s.IgnoreKueue, "Kueue integration off", "Kueue integration on"))
}

// admit runs the operator's webhook on a job being created, as an operator
// with these settings would.
func admit(ctx context.Context, job *paddlev1.PaddleJob, settings opvalidation.Settings) ([]string, error) {
	hook := &webhook.PaddleJobWebhook{Validator: &opvalidation.Validator{Settings: settings}}
	if err := hook.Default(ctx, job); err != nil {
		return nil, err
	}
	return hook.ValidateCreate(ctx, job)
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
		for _, list := range []struct {
			name       string
			containers []corev1.Container
		}{{"initContainers", rs.Template.Spec.InitContainers}, {"containers", rs.Template.Spec.Containers}} {
			for i, c := range list.containers {
				if err := client.ValidateImage(c.Image); err != nil {
					errs = append(errs, field.Invalid(path.Child(list.name).Index(i).Child("image"), c.Image, err.Error()))
				}
			}
		}
	}
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
