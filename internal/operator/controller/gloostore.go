package controller

import (
	_ "embed"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
)

// Gloo's HTTP store, served beside ps-0 rather than by it.
//
// Over the HTTP rendezvous Paddle's role maker starts the store inside the
// first parameter server's fleet.init() and returns from it only once every
// worker has joined the store (fleet/base/role_maker.py, _init_http: the
// store process is joined after the workers' DELETEs, polled every 5 s). So
// ps-0 would start listening only after the trainers had left their own
// fleet.init() — and they go straight on to init_worker(), which pushes the
// dense parameters to every server (the_one_ps.py _init_all_params) before
// Paddle's wait for the servers, a wait Paddle 3.0 has emptied
// (private_helper_function.py wait_server_ready). A short program always
// lost that race: "push dense param failed, status[-1]".
//
// So the store is served by a container of its own in ps-0's pod: a native
// sidecar (an init container with restartPolicy Always) running a small
// store in the job's own Paddle image, at the address Paddle and its launcher
// give the workers (ps-0's host and Gloo port). The servers get
// PADDLE_WITH_GLOO=0 (podcontract.GlooEnv): over HTTP Paddle builds no Gloo group for
// them anyway, and at 0 no server hosts a store or waits in fleet.init().
// Every server then listens as soon as it runs, and the workers are
// released once every server is Ready (startorder.go), ps-0 like the others.

//go:embed gloostore.py
var glooStoreScript string

// glooStoreContainerName is the store's container in ps-0's pod.
const glooStoreContainerName = paddlev1.ReservedGlooStoreContainer

// addGlooStore appends the store container to a pod's init containers: it
// runs the Paddle container's image with that container's security context
// (never more privileged than the template), listens on the pod's Gloo
// port, and the pod's training containers start once it does (its startup
// probe).
func addGlooStore(spec *corev1.PodSpec, port int32) {
	paddle := paddleContainer(spec)
	if paddle == nil {
		return
	}
	probe := &corev1.Probe{
		ProbeHandler:     corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(port)}},
		PeriodSeconds:    1,
		TimeoutSeconds:   1,
		SuccessThreshold: 1,
		// Python starts the store in well under a second; a node pulling
		// the image has not started the container yet.
		FailureThreshold: 60,
	}
	store := corev1.Container{
		Name:            glooStoreContainerName,
		Image:           paddle.Image,
		ImagePullPolicy: paddle.ImagePullPolicy,
		Command:         []string{"python3", "-c", glooStoreScript, strconv.Itoa(int(port))},
		RestartPolicy:   ptr.To(corev1.ContainerRestartPolicyAlways),
		StartupProbe:    probe,
		Resources: corev1.ResourceRequirements{
			// A few keys per worker: the interpreter is most of it. No CPU
			// limit: a throttled store slows every worker's rendezvous.
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("32Mi")},
			Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")},
		},
		SecurityContext:          paddle.SecurityContext.DeepCopy(),
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
	}
	spec.InitContainers = append(spec.InitContainers, store)
}
