package controller

import (
	"encoding/json"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/internal/operator/podcontract"
	"github.com/paddlejob/paddlejob/internal/testutil"
)

func TestNewPodIdentity(t *testing.T) {
	job := testutil.MakePaddleJob("wd", "ns").PS(1).Workers(2).Obj()
	job.UID = types.UID("uid-1")
	job.Spec.Worker.Template.Labels = map[string]string{"team": "ads"}
	job.Spec.Worker.Template.Annotations = map[string]string{"note": "kept"}

	pod := newPod(job, paddlev1.ReplicaWorker, 1, podcontract.PortRange{First: 23000, Count: 3}, podOptions{InitImage: "busybox:1.36"})

	if pod.Name != "wd-worker-1" || pod.Namespace != "ns" {
		t.Errorf("name = %s/%s", pod.Namespace, pod.Name)
	}
	wantLabels := map[string]string{"team": "ads", paddlev1.LabelJobName: "wd", paddlev1.LabelReplicaType: "worker", paddlev1.LabelReplicaIndex: "1"}
	for k, v := range wantLabels {
		if pod.Labels[k] != v {
			t.Errorf("label %s = %q, want %q", k, pod.Labels[k], v)
		}
	}
	if pod.Annotations["note"] != "kept" || pod.Annotations[paddlev1.AnnotationPorts] != "23000-23002" {
		t.Errorf("annotations = %v", pod.Annotations)
	}
	ref := metav1.GetControllerOf(pod)
	if ref == nil || ref.UID != "uid-1" || ref.Kind != "PaddleJob" || ref.APIVersion != "batch.paddlepaddle.org/v1" || !*ref.BlockOwnerDeletion {
		t.Errorf("controller reference = %+v", ref)
	}
	if pod.Spec.Hostname != "wd-worker-1" || pod.Spec.Subdomain != "wd" {
		t.Errorf("hostname.subdomain = %s.%s, want wd-worker-1.wd", pod.Spec.Hostname, pod.Spec.Subdomain)
	}
	if pod.Spec.RestartPolicy != corev1.RestartPolicyNever {
		t.Errorf("restartPolicy = %q, want Never when the template leaves it unset", pod.Spec.RestartPolicy)
	}
	if job.Spec.Worker.Template.Labels[paddlev1.LabelJobName] != "" || len(job.Spec.Worker.Template.Spec.Containers[0].Env) != 0 {
		t.Error("newPod modified the job's template")
	}
}

func TestPodNamesStayDNSLabels(t *testing.T) {
	long := make([]byte, paddlev1.MaxJobNameLength)
	for i := range long {
		long[i] = 'a'
	}
	for _, rt := range paddlev1.ReplicaTypes {
		name := paddlev1.PodName(string(long), rt, paddlev1.MaxReplicas-1)
		if errs := validation.IsDNS1123Label(name); len(errs) > 0 {
			t.Errorf("%s: %v", name, errs)
		}
	}
	if got := paddlev1.PodName(string(long)+"a", paddlev1.ReplicaWorker, paddlev1.MaxReplicas-1); len(got) <= validation.DNS1123LabelMaxLength {
		t.Errorf("MaxJobNameLength is not the maximum: %q (%d) still fits", got, len(got))
	}
}

func TestPodIndex(t *testing.T) {
	job := testutil.MakePaddleJob("a-worker-1", "ns").Workers(3).Obj()
	pod := newPod(job, paddlev1.ReplicaWorker, 2, podcontract.PortRange{First: 23000, Count: 3}, podOptions{})
	rt, i, ok := podIndex(pod)
	if !ok || rt != paddlev1.ReplicaWorker || i != 2 {
		t.Errorf("podIndex = %s, %d, %v", rt, i, ok)
	}
	pod.Labels[paddlev1.LabelReplicaIndex] = "7"
	if _, _, ok := podIndex(pod); ok {
		t.Error("a pod whose name disagrees with its labels was accepted")
	}
}

func hasMount(c corev1.Container, path string) bool {
	for _, m := range c.VolumeMounts {
		if m.MountPath == path {
			return true
		}
	}
	return false
}

// A pod is the same size in a job of 2 workers and of 1000: the job's lists
// are read from the endpoints ConfigMap, not written into every pod.
func TestPodSizeDoesNotGrowWithTheJob(t *testing.T) {
	for _, intranet := range []paddlev1.Intranet{paddlev1.IntranetPodIP, paddlev1.IntranetService, paddlev1.IntranetHost} {
		t.Run(string(intranet), func(t *testing.T) {
			size := func(workers int32) int {
				job := testutil.MakePaddleJob("wd", "ns").PS(2).Workers(workers).Intranet(intranet).Obj()
				b, err := json.Marshal(newPod(job, paddlev1.ReplicaWorker, 1, podcontract.PortRange{First: 23000, Count: 3}, podOptions{}))
				if err != nil {
					t.Fatal(err)
				}
				return len(b)
			}
			if small, big := size(2), size(1000); big > small+8 {
				t.Errorf("a worker pod of a 1000-worker job is %d bytes, of a 2-worker job %d", big, small)
			}
		})
	}
}
