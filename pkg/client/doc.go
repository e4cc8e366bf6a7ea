// Package client is the Go SDK for PaddleJobs: create (from a builder, a
// manifest, or the original paddle.job SDK's parameters with TrainingJob), get, list (by label
// selector), watch, wait for conditions, scale, suspend and resume, read
// logs and events, explain why pods stay Pending, read the training's metrics
// as numbers (LatestMetrics, MetricHistory), and delete.
//
// The package example (Example, compiled by go test) shows a job's whole
// life; the examples of Client's methods run against a real API server with
// the operator (go test -tags integration).
package client
