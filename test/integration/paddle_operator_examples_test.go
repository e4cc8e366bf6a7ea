package integration

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
)

// Every PaddleJob YAML of paddle-operator's examples (config/samples/seed004),
// created exactly as written, gets the
// right pods, Service and environment.
// paddleOperatorExample is one of paddle-operator's example files, the
// job it describes, and what more its pods must keep of it.
type paddleOperatorExample struct {
	file     string
	ps       int
	workers  int
	intranet paddlev1.Intranet
	mode     paddlev1.PaddleJobMode
	// volcano: the file ships a Volcano PodGroup the pods wait for.
	volcano bool
	check   func(t *testing.T, pods map[string]corev1.Pod)
}

func TestPaddleOperatorExamples(t *testing.T) {
	startOperator(t)
	for _, tc := range []paddleOperatorExample{{
		file: "config/samples/seed004/example-1-wide-and-deep.yaml", ps: 2, workers: 2,
		intranet: paddlev1.IntranetPodIP, mode: paddlev1.PaddleJobModePS,
	}, {
		file: "config/samples/seed004/example-2-resnet.yaml", workers: 2,
		intranet: paddlev1.IntranetPodIP, mode: paddlev1.PaddleJobModeCollective,
		check: func(t *testing.T, pods map[string]corev1.Pod) {
			p := pods["resnet-worker-0"]
			c := p.Spec.Containers[0]
			if len(c.Command) != 1 || c.Command[0] != "python" || len(c.Args) != 3 {
				t.Errorf("the user's command was changed: %v %v", c.Command, c.Args)
			}
			gpus := c.Resources.Limits["nvidia.com/gpu"]
			if !hasVolumeNamed(p.Spec.Volumes, "dshm") || gpus.Value() != 1 {
				t.Errorf("the user's /dev/shm volume or GPU limit was lost")
			}
		},
	}, {
		file: "config/samples/seed004/example-3-wide-and-deep-gpu-nodeselector.yaml", ps: 2, workers: 2,
		intranet: paddlev1.IntranetService, mode: paddlev1.PaddleJobModePS,
		check: func(t *testing.T, pods map[string]corev1.Pod) {
			for name, p := range pods {
				if p.Spec.NodeSelector["accelerator"] != "nvidia-tesla-p100" {
					t.Errorf("%s lost its nodeSelector", name)
				}
			}
		},
	}, {
		file: "config/samples/seed004/example-4-wide-and-deep-volcano.yaml", ps: 2, workers: 2,
		intranet: paddlev1.IntranetPodIP, mode: paddlev1.PaddleJobModePS, volcano: true,
		check: func(t *testing.T, pods map[string]corev1.Pod) {
			for name, p := range pods {
				if p.Spec.SchedulerName != "volcano" || p.Annotations["scheduling.k8s.io/group-name"] != "wide-ande-deep" {
					t.Errorf("%s: schedulerName %q, group %q; want volcano and the job's PodGroup", name, p.Spec.SchedulerName, p.Annotations["scheduling.k8s.io/group-name"])
				}
			}
		},
	}, {
		file: "config/samples/seed004/example-5-data-demo.yaml", ps: 2, workers: 2,
		intranet: paddlev1.IntranetPodIP, mode: paddlev1.PaddleJobModePS,
		check: func(t *testing.T, pods map[string]corev1.Pod) {
			p := pods["paddlejob-demo-1-worker-1"]
			if !hasVolumeNamed(p.Spec.Volumes, "data") || p.Spec.Volumes[0].PersistentVolumeClaim.ClaimName != "nfs-pvc" {
				t.Errorf("the PVC volume was lost: %+v", p.Spec.Volumes)
			}
		},
	}} {
		t.Run(tc.file, tc.run)
	}
}

// run creates the example's job (after its PodGroup, which Volcano then
// admits, when it ships one) and checks its pods, its headless Service,
// each worker's Paddle environment once the pods are released, and the
// job's status.
func (tc paddleOperatorExample) run(t *testing.T) {
	ns := newNamespace(t)
	job := loadJob(t, tc.file)
	job.Namespace = ns
	if tc.volcano {
		createOthers(t, ns, tc.file) // the user's PodGroup, as the example applies it
	}
	createJob(t, job)
	name := job.Name
	if tc.volcano {
		waitForCondition(t, ns, name, paddlev1.JobPodGroupAdmitted, metav1.ConditionFalse, "WaitingForPodGroup")
		if pods := listPods(t, ns, name); len(pods) != 0 {
			t.Fatalf("%d pods created before Volcano admitted the PodGroup", len(pods))
		}
		setPodGroupPhase(t, ns, name, "Inqueue") // as Volcano's enqueue action does
	}
	pods := waitForPods(t, ns, name, podNames(name, tc.ps, tc.workers, 0)...)

	created := getJob(t, ns, name)
	if created.Spec.Intranet != tc.intranet { // the CRD's default when unset
		t.Errorf("intranet = %q, want %q", created.Spec.Intranet, tc.intranet)
	}
	checkHeadlessServiceAndPods(t, created, pods)
	if tc.check != nil {
		tc.check(t, pods)
	}
	addr := tc.releaseWithAddresses(t, ns, name, pods)
	for i := 0; i < tc.workers; i++ {
		tc.checkWorkerEnv(t, job, i, addr)
	}
	eventually(t, "status mode and counts", func() (bool, error) {
		j := getJob(t, ns, name)
		ok := j.Status.Mode == tc.mode && j.Status.Worker != nil && j.Status.Worker.Ready == fmt.Sprintf("0/%d", tc.workers) &&
			j.Status.IsConditionTrue(paddlev1.JobCreated)
		return ok, fmt.Errorf("status %+v", j.Status)
	})
}

// checkHeadlessServiceAndPods checks that the job's headless Service
// follows its pods, in the same pass, and that each pod is controlled by
// the job, named by hostname.subdomain, and runs the paddle container
// first.
func checkHeadlessServiceAndPods(t *testing.T, job *paddlev1.PaddleJob, pods map[string]corev1.Pod) {
	t.Helper()
	ns, name := job.Namespace, job.Name
	svc := &corev1.Service{}
	eventually(t, "the headless Service", func() (bool, error) {
		err := k8s.Get(ctx(t), types.NamespacedName{Namespace: ns, Name: name}, svc)
		if isNotFound(err) {
			return false, nil
		}
		return err == nil, err
	})
	if svc.Spec.ClusterIP != corev1.ClusterIPNone || !svc.Spec.PublishNotReadyAddresses || svc.Spec.Selector[paddlev1.LabelJobName] != name {
		t.Errorf("Service is not the job's headless Service: %+v", svc.Spec)
	}
	for podName, p := range pods {
		ref := metav1.GetControllerOf(&p)
		if ref == nil || ref.UID != job.UID || !*ref.BlockOwnerDeletion {
			t.Errorf("%s: controller reference %+v", podName, ref)
		}
		if p.Spec.Hostname != podName || p.Spec.Subdomain != name {
			t.Errorf("%s: hostname.subdomain = %s.%s", podName, p.Spec.Hostname, p.Spec.Subdomain)
		}
		if p.Spec.Containers[0].Name != "paddle" {
			t.Errorf("%s: first container %q", podName, p.Spec.Containers[0].Name)
		}
	}
}

// releaseWithAddresses gives the pods of the job name their addresses:
// PodIP pods wait for theirs, checked, then get one each and are released;
// Service pods know theirs. It returns each pod's address by pod name.
func (tc paddleOperatorExample) releaseWithAddresses(t *testing.T, ns, name string, pods map[string]corev1.Pod) func(pod string) string {
	t.Helper()
	ips := map[string]string{}
	for i, n := range podNames(name, tc.ps, tc.workers, 0) {
		ips[n] = fmt.Sprintf("10.20.0.%d", i+1)
	}
	if tc.intranet == paddlev1.IntranetPodIP {
		for podName := range pods {
			if _, err := resolvedEnv(t, ns, podName); err == nil {
				t.Fatalf("%s could start before every pod had an IP", podName)
			}
		}
		assignIPs(t, ns, ips)
		releaseAll(t, ns, name, podNames(name, tc.ps, tc.workers, 0))
	}
	return func(pod string) string {
		if tc.intranet == paddlev1.IntranetService {
			return pod + "." + name
		}
		return ips[pod]
	}
}

// checkWorkerEnv checks the Paddle environment of the job's worker i: its
// role, rank, address, job ID and world size, the trainer and pserver
// endpoint lists at the addresses addr gives, and Gloo's when on.
func (tc paddleOperatorExample) checkWorkerEnv(t *testing.T, job *paddlev1.PaddleJob, i int, addr func(pod string) string) {
	t.Helper()
	ns, name := job.Namespace, job.Name
	pod := paddlev1.PodName(name, paddlev1.ReplicaWorker, i)
	env, err := resolvedEnv(t, ns, pod)
	if err != nil {
		t.Fatalf("env of %s: %v", pod, err)
	}
	want := map[string]string{
		"PADDLE_TRAINING_ROLE": "TRAINER",
		"PADDLE_TRAINER_ID":    fmt.Sprint(i),
		"POD_IP":               addr(pod),
		"PADDLE_JOB_ID":        ns + "-" + name,
		"PADDLE_TRAINERS_NUM":  fmt.Sprint(tc.workers),
	}
	var workerEPs, psEPs []string
	for j := 0; j < tc.workers; j++ {
		workerEPs = append(workerEPs, addr(paddlev1.PodName(name, paddlev1.ReplicaWorker, j))+":23000")
	}
	want["PADDLE_TRAINER_ENDPOINTS"] = join(workerEPs)
	if tc.ps > 0 {
		for j := 0; j < tc.ps; j++ {
			psEPs = append(psEPs, addr(paddlev1.PodName(name, paddlev1.ReplicaPS, j))+":23000")
		}
		want["PADDLE_PSERVERS_IP_PORT_LIST"] = join(psEPs)
	}
	if job.Spec.GlooLevel() > 0 {
		want["PADDLE_WITH_GLOO"] = "1"
		want["PADDLE_GLOO_HTTP_ENDPOINT"] = addr(paddlev1.PodName(name, paddlev1.ReplicaPS, 0)) + ":23001"
	}
	for k, v := range want {
		if env[k] != v {
			t.Errorf("%s: %s = %q, want %q", pod, k, env[k], v)
		}
	}
}

func join(s []string) string {
	out := ""
	for i, v := range s {
		if i > 0 {
			out += ","
		}
		out += v
	}
	return out
}

func hasVolumeNamed(vs []corev1.Volume, name string) bool {
	for _, v := range vs {
		if v.Name == name {
			return true
		}
	}
	return false
}
