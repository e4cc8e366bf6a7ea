// Package progress receives the training programs' reports of their
// progress and metrics: an HTTP endpoint authenticating each report with the
// reporting pod's projected service-account token (audience Audience,
// verified by a TokenReview), accepting it only for the job that pod
// belongs to, limited in rate and size. Reports wait in a Store, in memory;
// the controller copies the latest into the job's status at most every
// Options.StatusInterval, and a HistoryWriter keeps each metric's bounded
// curve in a ConfigMap of the job. See docs/progress.md.
package progress
