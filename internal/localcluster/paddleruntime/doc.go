// Package paddleruntime provides the pinned CPU PaddlePaddle runtimes: one
// Python virtual environment per pinned release (2.6.2, 3.0.0 — the
// default — and 3.3.1), each holding paddlepaddle and every dependency at the
// versions, and with the wheel hashes, of pins/paddle-<version>.txt, which
// Paddle programs run with on this machine (the local node picks the release
// an image asks for).
//
// Paddle is a large native wheel with exact dependency needs, so the runtime is
// installed with pip once and cached outside the repository, in a directory
// named after the pin and the interpreter: a changed pin or Python gets a new
// runtime instead of a stale one. A directory the user names is used instead
// when it holds a working runtime.
//
// Layout under <cache>/paddle-runtime:
//
//	.lock                      serialises installs across processes
//	<key> -> <key>.<random>    the published runtime (a symlink)
//	<key>.<random>/            the venv, built here and never moved
//	<key>.log                  the last install's venv and pip output
//
// A venv cannot be renamed after it is built (pip writes its absolute path
// into the scripts of bin/), so it is built in its final place under a random
// name and published by renaming a symlink over <key>: a half-built runtime
// is never reachable by its key.
//
// pip installs the pins in one run with --report (pip.go): its report
// (JSON, pip 22.2 and later; an older pip in the venv is first upgraded to
// the one pip.txt pins), checked to hold every pin at its version, stays in
// the runtime as paddlejob-pip-report.json. Why an install failed is
// decided from what is structured rather than from pip's messages, which
// change between pip releases (pipfailure.go): a pin pip cannot install
// here is found by asking pip about each pin alone (dry runs), and named
// with the wheel pip would pick instead or the Requires-Python that
// excludes the interpreter; an index pip resolves no pin from, any wheel allowed, is unreachable; a
// full disk is read with statfs (space.go).
package paddleruntime
