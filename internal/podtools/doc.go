// Package podtools holds the tools that run inside a training pod or build
// what it runs, the third of paddlejob's three products. Each is a
// `paddlejob` subcommand:
//
//   - launcher: `paddlejob launch`, the entrypoint that finds a plain
//     batch/v1 Job's peers and hands them to Paddle (the single-node, three-node and AWS tutorials' Jobs);
//   - datasplit: `paddlejob data split`, one data share per trainer (the three-node tutorial);
//   - imagecontext: `paddlejob image context`, a Docker build context from a
//     trainer package and a base image (the paddle.job SDK).
//
// podcmd builds the commands of the two that run in a pod, launch and data
// split, for the CLI and for cmd/paddlejob-launch, the small binary a
// training image copies instead of the whole CLI.
package podtools
