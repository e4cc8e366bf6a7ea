// Package imagecontext is `paddlejob image context`, the Go counterpart of
// the paddle.job SDK's build_docker.sh: it writes a Docker build context that adds a
// trainer package to a base image, and builds it when a Docker engine is
// available.
package imagecontext
