// Package webhook is the PaddleJob admission webhook: defaults and checks the
// CRD schema cannot express, changes that may not happen to a running job,
// and warnings for deprecated or ignored fields.
package webhook
