// Package podtools holds the tools that run inside a training pod or build
// what it runs, the third of paddlejob's three products. Each is a
// `paddlejob` subcommand:
//
//   - launcher: `paddlejob launch`, the entrypoint that finds a plain
//     batch/v1 Job's peers and hands them to Paddle (seeds 000, 001, 003);
//   - datasplit: `paddlejob data split`, one data share per trainer (seed 001);
//   - imagecontext: `paddlejob image context`, a Docker build context from a
//     trainer package and a base image (seed 002).
package podtools
