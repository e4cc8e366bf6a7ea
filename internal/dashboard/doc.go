// Package dashboard is `paddlejob dashboard`: a web UI of a cluster's
// PaddleJobs served on this machine, read with the user's own credentials
// through the Go SDK (pkg/client), as kubectl proxy does, with nothing
// installed in the cluster.
//
// The jobs page lists a namespace's jobs (or all) with their phase, pods
// ready per role, restarts, progress and ETA, updated live from a watch. A
// job's page shows its conditions as a timeline, its pods, its events, a
// curve of every metric its training program reported (from the metric
// history the operator writes, docs/progress.md) against time or step with
// its restarts marked, each pod's log followed live, and its YAML.
//
// Live updates are server-sent events fed by informers: one informer per
// namespace for every browser on the jobs page, which sends each browser
// only the rows that changed, in batches; one set of watches per open job
// page. The page (web/, Preact and uPlot) is built into web/dist and
// embedded in the binary: it loads nothing from elsewhere.
package dashboard
