package main

// The fake kubelet: there is no node, so the harness marks each new pod of a
// benchmark namespace Running, with a pod IP and a host IP, through the
// status subresource, as a kubelet would once the containers started. That is
// what brings the jobs to phase Running.

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
)

// fakeHostIP is the node address every pod reports.
const fakeHostIP = "10.255.0.1"

type fakeKubelet struct {
	client  kubernetes.Interface
	pods    cache.Indexer
	queue   workqueue.TypedRateLimitingInterface[string]
	workers int
	seq     atomic.Uint32

	mu   sync.Mutex
	done map[types.UID]bool // pods already marked Running
}

func newFakeKubelet(client kubernetes.Interface, pods cache.Indexer, workers int) *fakeKubelet {
	return &fakeKubelet{
		client:  client,
		pods:    pods,
		workers: workers,
		queue:   workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]()),
		done:    map[types.UID]bool{},
	}
}

// observe queues a pod that has not been marked Running yet.
func (k *fakeKubelet) observe(p *corev1.Pod) {
	if p.DeletionTimestamp != nil || (p.Status.Phase != "" && p.Status.Phase != corev1.PodPending) {
		return
	}
	k.mu.Lock()
	done := k.done[p.UID]
	k.mu.Unlock()
	if !done {
		k.queue.Add(p.Namespace + "/" + p.Name)
	}
}

// run starts the workers; they stop with ctx.
func (k *fakeKubelet) run(ctx context.Context) {
	go func() {
		<-ctx.Done()
		k.queue.ShutDown()
	}()
	for range k.workers {
		go func() {
			for {
				key, shutdown := k.queue.Get()
				if shutdown {
					return
				}
				if err := k.start(ctx, key); err != nil && ctx.Err() == nil {
					fmt.Fprintf(os.Stderr, "fake kubelet: %v (retrying)\n", err)
					k.queue.AddRateLimited(key)
				} else {
					k.queue.Forget(key)
				}
				k.queue.Done(key)
			}
		}()
	}
}

// start marks a pod Running.
func (k *fakeKubelet) start(ctx context.Context, key string) error {
	obj, exists, err := k.pods.GetByKey(key)
	if err != nil || !exists {
		return err
	}
	p := obj.(*corev1.Pod)
	k.mu.Lock()
	done := k.done[p.UID]
	k.mu.Unlock()
	if done || p.DeletionTimestamp != nil || (p.Status.Phase != "" && p.Status.Phase != corev1.PodPending) {
		return nil
	}
	patch, err := runningStatusPatch(p, fakePodIP(k.seq.Add(1)), fakeHostIP, time.Now())
	if err != nil {
		return err
	}
	_, err = k.client.CoreV1().Pods(p.Namespace).Patch(ctx, p.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return fmt.Errorf("marking pod %s Running: %w", key, err)
	}
	k.mu.Lock()
	k.done[p.UID] = true
	k.mu.Unlock()
	return nil
}

// fakePodIP is the n-th address of 10.0.0.0/8, skipping .0.
func fakePodIP(n uint32) string {
	n = n%(1<<24-2) + 1
	return fmt.Sprintf("10.%d.%d.%d", n>>16&0xff, n>>8&0xff, n&0xff)
}

// runningStatusPatch is the strategic merge patch of a pod's status that a
// kubelet's would amount to once every container runs: phase Running, the
// addresses, the conditions, init containers completed and containers
// running.
func runningStatusPatch(p *corev1.Pod, podIP, hostIP string, now time.Time) ([]byte, error) {
	t := metav1.NewTime(now.Truncate(time.Second))
	st := corev1.PodStatus{
		Phase:     corev1.PodRunning,
		HostIP:    hostIP,
		HostIPs:   []corev1.HostIP{{IP: hostIP}},
		PodIP:     podIP,
		PodIPs:    []corev1.PodIP{{IP: podIP}},
		StartTime: &t,
	}
	for _, c := range []corev1.PodConditionType{corev1.PodScheduled, corev1.PodInitialized, corev1.ContainersReady, corev1.PodReady} {
		st.Conditions = append(st.Conditions, corev1.PodCondition{Type: c, Status: corev1.ConditionTrue, LastTransitionTime: t})
	}
	for _, c := range p.Spec.InitContainers {
		st.InitContainerStatuses = append(st.InitContainerStatuses, corev1.ContainerStatus{
			Name: c.Name, Image: c.Image, Ready: true,
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed", StartedAt: t, FinishedAt: t}},
		})
	}
	started := true
	for _, c := range p.Spec.Containers {
		st.ContainerStatuses = append(st.ContainerStatuses, corev1.ContainerStatus{
			Name: c.Name, Image: c.Image, Ready: true, Started: &started,
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: t}},
		})
	}
	return json.Marshal(map[string]any{"status": st})
}
