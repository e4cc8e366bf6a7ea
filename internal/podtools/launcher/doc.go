// Package launcher is `paddlejob launch`: the entrypoint of a container in a
// plain batch/v1 Job, as PaddlePaddle's Kubernetes tutorials write them (the
// single-node, the three-node and the AWS tutorials: seeds 000, 001 and 003,
// which docs/launcher.md follows). It finds the Job's other pods through the
// API server, gives every pod a trainer id from its pod IP,
// stages the trainer's data and runs a pserver and a trainer with per-node
// logs.
//
// In fleet mode (the default) both processes run one PaddlePaddle 2.x/3.x
// program and learn their roles and peers from the PADDLE_* variables
// paddle.distributed.fleet's PaddleCloudRoleMaker reads (fleet.go). The
// legacy-flags mode turns the CONF_PADDLE_* environment into PaddlePaddle
// v1's pserver and trainer flags instead (args.go).
//
// The decisions (environment, ids, commands, arguments, the waiting
// message) are pure functions with table tests beside them; process
// supervision lives in process.go and supervise.go, and the API server is
// reached only through the Cluster interface in cluster.go.
package launcher
