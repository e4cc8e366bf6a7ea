// Package webhook is the PaddleJob admission webhook: defaults, the checks
// of internal/operator/validation (shared with the controller) and the
// warnings they find, a server-side dry run of each role's first pod, and
// the wiring of the rotator that keeps the webhook's self-issued serving
// certificate (open-policy-agent/cert-controller).
package webhook
