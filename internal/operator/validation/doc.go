// Package validation is every check of a PaddleJob the CRD schema cannot
// make, in one place for the two callers: the admission webhook refuses
// what it finds, and the controller, where no webhook is installed, fails
// the job with it (reason InvalidSpec) or holds a changed spec back
// (the spec hash, SpecHash).
//
// The schema (CEL and OpenAPI markers in api/v1) rejects what it can
// express, on every write, webhook or not. What is left needs the
// operator's own knowledge — the environment contract its pods get, the
// ports GPUs take, the limits the endpoint lists must fit — or a field
// path the schema's rules cannot name (a container's index). Each check
// returns a field.ErrorList whose errors name the field and what it may be.
//
// The layout follows Kubernetes' own API validation packages
// (pkg/apis/<group>/validation: pure functions returning field.ErrorList,
// called by whichever component admits the object): it is not in api/v1
// because its checks depend on what the operator makes of a job: the pod
// contract (internal/operator/podcontract), which it calls directly, and the
// operator's settings (Settings), which its caller hands in. It is not in the
// webhook package because the controller runs it too, without importing the
// webhook; it imports neither the controller nor the webhook, so the webhook
// and `paddlejob validate` run it without the controller (make lint checks
// it: hack/importrules).
//
//	validation.go  Validator and Settings; Validate, ValidateUpdate
//	podfields.go   the fields that shape a job's pods: which may change while
//	               its pods run (ValidateUpdate) and the spec hash pods record
//	spec.go        reserved names, etcd endpoints
//	gpus.go        the GPUs a pod may ask for
//	templates.go   templates that would override the environment contract
//	endpoints.go   the limits the endpoint lists must fit
//	gloo.go        the shared directory of Gloo's file-system rendezvous
//	warnings.go    what is accepted but deprecated, ignored or odd
package validation
