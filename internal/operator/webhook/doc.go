// Package webhook is the PaddleJob admission webhook: defaults, the checks
// of internal/operator/validation (shared with the controller) and the
// warnings they find, a server-side dry run of each role's first pod, and
// the webhook's serving certificate.
package webhook
