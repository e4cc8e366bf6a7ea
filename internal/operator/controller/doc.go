// Package controller reconciles PaddleJobs into pods, a headless Service and
// the environment contract that lets Paddle processes find each other.
//
// The package is cut by feature: each file holds a feature's decisions (pure
// functions of the job, its pods and the time) and its actions (the writes
// they call for), and its _test.go drives them. Following a feature means
// reading its file and reconcile.go, which calls it.
//
// The pass
//
//	reconcile.go     Reconcile and the active job's pass: observe from the
//	                 cache, dispatch to finished/suspended, sync, write status
//	status.go        the status computed from the pass (nextStatus) and the
//	                 one path that writes it (updateStatus); write-ahead
//	                 steps go through it too, named where they are called;
//	                 an action's error is reported under its reason
//	                 (failedAction), and a conflict is returned, for
//	                 controller-runtime to requeue the job
//	expectations.go  the creates and deletes the cache has not shown yet
//	podcontrol.go    creating and deleting pods, bounded and in batches
//	setup.go         watches, caches, indexes and PodGroup discovery
//	metrics.go       the operator's Prometheus metrics
//
// The features
//
//	intranet.go   spec.intranet: host network, host ports and their
//	              write-ahead record (recordHostPorts), POD_IP, endpoint
//	              publication (up front, or once every pod has an IP)
//	restart.go    restartPolicy, backoffLimit, restart backoff and the
//	              recreation of failed pods (write-ahead: recordRestarts)
//	explain.go    a failure explains itself: containers keep the end of
//	              their logs (FallbackToLogsOnError), and a failure's
//	              message quotes the failing line and, for a known
//	              failure (internal/paddlefailure), its cause and fix
//	cleanup.go    a finished job: cleanPodPolicy and ttlSecondsAfterFinished
//	suspend.go    spec.suspend and the resume
//	deadline.go   activeDeadlineSeconds
//	gang.go       gang scheduling: schedulingPolicy, PodGroups, admission
//	elastic.go    elastic workers: etcd and the launcher's variables
//	progress.go   the progress the pods report (internal/operator/progress)
//	              copied into the status at most once per interval
//
// # The pod and what it reads
//
// What a pod gets — its environment, ports, endpoint lists, Gloo settings,
// start order and gang scheduler — is the pod contract, pure functions in
// internal/operator/podcontract (docs/env-contract.md), which validation
// measures against too. This package builds the pods from it and does the
// writes it calls for.
//
//	pods.go       a pod from its role's template and the contract; the
//	              job's pods by role and index
//	validate.go   the operator's settings validation (shared with the
//	              webhook) checks a job under (NewValidator), once per spec
//	specchange.go the spec hash each pod records: no pod of a changed
//	              spec while a pod of the old one lives
//	endpoints.go  writing the endpoints ConfigMap the pods read the job
//	              variables from
//	ports.go      the host port allocator
//	service.go    the headless Service
//
// A new feature is a new file with its decision, its action and its test,
// called from reconcile.go (or from newPod or nextStatus when it shapes the
// pod or the status). Its test drives whole passes with pass_test.go's
// fixture: a job and its pods on controller-runtime's fake client, a fake
// clock, and what the pass created, deleted, wrote and requeued.
package controller
