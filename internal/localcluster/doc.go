// Package localcluster is the local cluster, the second of paddlejob's three
// products: a real single-node Kubernetes on this machine. etcd,
// kube-apiserver, kube-scheduler and kube-controller-manager run as local
// processes bound to 127.0.0.1 with generated certificates, beside the
// PaddleJob CRD, the operator and the process node that runs pods as
// sandboxed processes. Everything lives in one directory (DefaultHome) that
// Down removes. Its packages:
//
//   - node: the process node, a kubelet that runs pods as sandboxed processes;
//   - runtimenode: the container-runtime node, the real kubelet with
//     containerd and runc (up --node-runtime=containerd), and ociimage, which
//     writes the images it imports;
//   - kubebin: builds the control-plane binaries from Go modules, cached;
//   - paddleruntime: installs the pinned CPU PaddlePaddle runtime, cached.
package localcluster
