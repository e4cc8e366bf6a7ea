// Package node is the process node of the local cluster: a kubelet for one
// machine that runs each pod bound to it as sandboxed host processes
// (bubblewrap), with no container images or runtime. It is built on
// virtual-kubelet, which registers the Node, renews its lease, runs the pod
// lifecycle loop and serves the kubelet API; the Provider here runs the pods.
//
// Where things live:
//   - node.go: New and Run, the virtual-kubelet controllers around the
//     Provider; nodeinfo.go the Node object and capacity.
//   - provider.go: the Provider (virtual-kubelet's PodLifecycleHandler),
//     which keeps a podRuntime per pod and builds the podDeps they share.
//   - pod.go: podRuntime, one pod's life and status, and podDeps, all it
//     uses of the node (clock, process starter, recorder, images, objects,
//     hosts files, callbacks), so that it runs on fakes in unit tests.
//   - containers.go: the container loop, restart and CrashLoopBackOff
//     (restart.go: the policy and back-off arithmetic), grace periods.
//   - assemble.go: a container run's command, environment (env.go) and
//     mounts (volumes.go, imagefiles.go) as a bubblewrap command line
//     (sandbox.go); runtime.go starts it (processStarter).
//   - prepare.go: a pod's sandbox files, hosts files (hosts.go) and volumes
//     (volumes.go, projection.go, atomicwriter.go).
//   - noderestart.go: what a node started after a kill does with the pods
//     it had run: their addresses held, started pods reported Failed
//     (NodeRestarted), the others run again.
//   - status.go: pod status as the kubelet computes it; logs.go and
//     server.go the kubelet API's logs; tokens.go, ipam.go, images.go,
//     dockerfile.go and gpu.go the rest.
//
// The Service proxy (kube-proxy's stand-in) is the serviceproxy package.
//
// Tests: go test runs the unit tests only (fakes, no API server, no
// sandbox). The integration tests (*_integration_test.go, harness_test.go,
// helper_test.go) start a kube-apiserver and real sandboxes; they build with
// -tags integration and fail, not skip, without bubblewrap.
package node
