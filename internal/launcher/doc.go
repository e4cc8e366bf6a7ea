// Package launcher is `paddlejob launch`: the entrypoint of a container in a
// plain batch/v1 Job (seeds 000, 001 and 003). It finds the Job's other pods
// through the API server, gives every pod a trainer id from its pod IP, turns
// the CONF_PADDLE_* environment into the legacy pserver and trainer flags,
// stages the trainer's data and runs the two processes with per-node logs.
//
// The decisions (environment, ids, arguments, the waiting message) are pure
// functions with table tests beside them; process supervision lives in
// process.go and supervise.go, and the API server is reached only through the
// Cluster interface in cluster.go.
package launcher
