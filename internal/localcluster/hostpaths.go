package localcluster

// ExamplesDir is where the example jobs (examples/jobs) keep their output
// through hostPath volumes: `paddlejob up` lets pods write there unless told
// other directories (--host-path-rw), so that the examples run as written.
const ExamplesDir = "/tmp/paddlejob-examples"
