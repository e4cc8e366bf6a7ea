package webhook

import (
	"context"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/internal/operator/controller"
	"github.com/paddlejob/paddlejob/internal/operator/progress"
	"github.com/paddlejob/paddlejob/internal/testutil"
)

func TestDefault(t *testing.T) {
	w := &PaddleJobWebhook{Options: controller.DefaultOptions()}
	job := testutil.MakePaddleJob("j", "ns").PS(1).Workers(2).Obj()
	job.Spec.CleanPolicy = paddlev1.CleanPodPolicyOnCompletion
	job.Spec.Elastic = ptr.To[int32](1)
	if err := w.Default(context.Background(), job); err != nil {
		t.Fatal(err)
	}
	if job.Spec.CleanPodPolicy != "" || job.Spec.CleanPolicy != paddlev1.CleanPodPolicyOnCompletion {
		t.Errorf("cleanPodPolicy %q, cleanPolicy %q: want the alias left as written, for api/v1 to resolve", job.Spec.CleanPodPolicy, job.Spec.CleanPolicy)
	}
	if job.Spec.Worker.RestartPolicy != paddlev1.RestartPolicyOnFailure || job.Spec.PS.RestartPolicy != paddlev1.RestartPolicyNever {
		t.Errorf("restart policies: worker %q, ps %q", job.Spec.Worker.RestartPolicy, job.Spec.PS.RestartPolicy)
	}
}

// A job sent to a Kueue queue is created suspended; an update leaves
// suspend alone (Kueue resumes the job), and so does an operator whose Kueue
// integration is off.
func TestDefaultSuspendsQueuedJobsAtCreation(t *testing.T) {
	tests := []struct {
		name        string
		op          admissionv1.Operation
		queue       string
		ignoreKueue bool
		want        bool
	}{
		{name: "created with a queue", op: admissionv1.Create, queue: "team-a", want: true},
		{name: "created without a queue", op: admissionv1.Create},
		{name: "updated with a queue", op: admissionv1.Update, queue: "team-a"},
		{name: "created with a queue, integration off", op: admissionv1.Create, queue: "team-a", ignoreKueue: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			opts := controller.DefaultOptions()
			opts.IgnoreKueue = tc.ignoreKueue
			w := &PaddleJobWebhook{Options: opts}
			job := testutil.MakePaddleJob("j", "ns").Workers(2).Obj()
			if tc.queue != "" {
				job.Labels = map[string]string{paddlev1.KueueQueueNameLabel: tc.queue}
			}
			ctx := admission.NewContextWithRequest(context.Background(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{Operation: tc.op}})
			if err := w.Default(ctx, job); err != nil {
				t.Fatal(err)
			}
			if got := job.Spec.IsSuspended(); got != tc.want {
				t.Errorf("suspended %v, want %v", got, tc.want)
			}
		})
	}
}

func TestValidateCreate(t *testing.T) {
	tests := []struct {
		name     string
		mutate   func(*paddlev1.PaddleJob)
		opts     func(*controller.Options)
		wantErr  string
		wantWarn string
	}{
		{name: "a valid job", mutate: func(*paddlev1.PaddleJob) {}},
		{name: "the reserved container name", mutate: func(j *paddlev1.PaddleJob) {
			j.Spec.Worker.Template.Spec.Containers[0].Name = "wait-for-endpoints"
		}, wantErr: `spec.worker.template.spec.containers[0].name: Invalid value: "wait-for-endpoints": is reserved`},
		{name: "the reserved volume name", mutate: func(j *paddlev1.PaddleJob) {
			j.Spec.PS.Template.Spec.Volumes = append(j.Spec.PS.Template.Spec.Volumes, testutil.EmptyDir("paddlejob-endpoints"))
		}, wantErr: `spec.ps.template.spec.volumes[0].name`},
		{name: "minAvailable above the job's pods", mutate: func(j *paddlev1.PaddleJob) {
			j.Spec.SchedulingPolicy = &paddlev1.SchedulingPolicy{MinAvailable: ptr.To[int32](9)}
		}, wantErr: "spec.schedulingPolicy.minAvailable: Invalid value: 9: exceeds the job's 3 pods"},
		{name: "more GPUs than a pod has ports for", mutate: func(j *paddlev1.PaddleJob) {
			j.Spec.Worker.Template.Spec.Containers[0].Resources.Limits = corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("100000")}
		}, wantErr: `spec.worker.template.spec.containers[0].resources.limits[nvidia.com/gpu]: Invalid value: "100k": must be at most 1024`},
		{name: "a template setting a contract variable", mutate: func(j *paddlev1.PaddleJob) {
			j.Spec.Worker.Template.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "PADDLE_TRAINER_ID", Value: "0"}}
		}, wantErr: `spec.worker.template.spec.containers[0].env[0].name: Invalid value: "PADDLE_TRAINER_ID": is set by the operator`},
		{name: "hostNetwork outside Host intranet", mutate: func(j *paddlev1.PaddleJob) { j.Spec.PS.Template.Spec.HostNetwork = true },
			wantErr: "spec.ps.template.spec.hostNetwork: Invalid value: true: the host network is for Host intranet only"},
		{name: "a fixed port in Host intranet", mutate: func(j *paddlev1.PaddleJob) {
			j.Spec.Intranet = paddlev1.IntranetHost
			j.Spec.Worker.Template.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 8080}}
		}, wantWarn: "spec.worker.template.spec.containers[0].ports[0].containerPort is 8080"},
		{name: "the deprecated cleanPolicy", mutate: func(j *paddlev1.PaddleJob) { j.Spec.CleanPolicy = paddlev1.CleanPodPolicyNever },
			wantWarn: "spec.cleanPolicy is deprecated"},
		{name: "paddle-operator's elastic bounds", mutate: func(j *paddlev1.PaddleJob) { j.Spec.Worker.Limits = ptr.To[int32](4) },
			wantWarn: "prefer spec.elasticPolicy"},
		{name: "a schedulingPolicy no scheduler reads", mutate: func(j *paddlev1.PaddleJob) {
			j.Spec.SchedulingPolicy = &paddlev1.SchedulingPolicy{Queue: "q"}
		}, opts: func(o *controller.Options) { o.GangScheduler = controller.GangNone }, wantWarn: "spec.schedulingPolicy is ignored"},
		{name: "a schedulingPolicy under default-scheduler with no gang scheduler", mutate: func(j *paddlev1.PaddleJob) {
			j.Spec.SchedulingPolicy = &paddlev1.SchedulingPolicy{Queue: "q"}
			j.Spec.Worker.Template.Spec.SchedulerName = "default-scheduler"
		}, opts: func(o *controller.Options) { o.GangScheduler = controller.GangNone }, wantWarn: "spec.schedulingPolicy is ignored"},
		{name: "a schedulingPolicy for a template naming volcano", mutate: func(j *paddlev1.PaddleJob) {
			j.Spec.SchedulingPolicy = &paddlev1.SchedulingPolicy{Queue: "q"}
			j.Spec.Worker.Template.Spec.SchedulerName = "volcano"
		}, opts: func(o *controller.Options) { o.GangScheduler = controller.GangNone }},
		{name: "an elastic job without etcd", mutate: func(j *paddlev1.PaddleJob) { j.Spec.Elastic = ptr.To[int32](1) },
			wantWarn: "PADDLE_MASTER stays unset"},
		{name: "a progress deadline no report can meet", mutate: func(j *paddlev1.PaddleJob) { j.Spec.ProgressDeadlineSeconds = ptr.To[int64](60) },
			wantWarn: "spec.progressDeadlineSeconds is ignored: the operator takes no progress reports"},
		{name: "a progress deadline with the progress endpoint", mutate: func(j *paddlev1.PaddleJob) { j.Spec.ProgressDeadlineSeconds = ptr.To[int64](60) },
			opts: func(o *controller.Options) {
				o.Progress = controller.ProgressOptions{Store: progress.NewStore(progress.Options{}), URL: "http://127.0.0.1:9444"}
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			opts := controller.DefaultOptions()
			if tc.opts != nil {
				tc.opts(&opts)
			}
			w := &PaddleJobWebhook{Options: opts}
			job := testutil.MakePaddleJob("j", "ns").PS(1).Workers(2).Obj()
			tc.mutate(job)
			warnings, err := w.ValidateCreate(context.Background(), job)
			if (err != nil) != (tc.wantErr != "") || (err != nil && !strings.Contains(err.Error(), tc.wantErr)) {
				t.Errorf("error %v, want %q", err, tc.wantErr)
			}
			if got := strings.Join(warnings, "\n"); (tc.wantWarn == "") != (got == "") || !strings.Contains(got, tc.wantWarn) {
				t.Errorf("warnings %q, want %q", got, tc.wantWarn)
			}
		})
	}
}

func TestValidateUpdate(t *testing.T) {
	w := &PaddleJobWebhook{Options: controller.DefaultOptions()}
	started := func() *paddlev1.PaddleJob {
		j := testutil.MakePaddleJob("j", "ns").PS(1).Workers(2).Obj()
		j.Status.Phase = paddlev1.PaddleJobRunning
		return j
	}
	tests := []struct {
		name    string
		old     func() *paddlev1.PaddleJob
		mutate  func(*paddlev1.PaddleJob)
		wantErr string
	}{
		{name: "scaling a running job", old: started, mutate: func(j *paddlev1.PaddleJob) { j.Spec.Worker.Replicas = 4 }},
		{name: "suspending it", old: started, mutate: func(j *paddlev1.PaddleJob) { j.Spec.Suspend = ptr.To(true) }},
		{name: "changing its image", old: started, mutate: func(j *paddlev1.PaddleJob) {
			j.Spec.Worker.Template.Spec.Containers[0].Image = "other:v2"
		}, wantErr: "spec.worker.template: Forbidden: may not change once the job has started"},
		{name: "changing its intranet", old: started, mutate: func(j *paddlev1.PaddleJob) { j.Spec.Intranet = paddlev1.IntranetService },
			wantErr: "spec.intranet: Forbidden"},
		{name: "adding a role", old: started, mutate: func(j *paddlev1.PaddleJob) { j.Spec.Heter = j.Spec.Worker.DeepCopy() },
			wantErr: "spec.heter: Forbidden: roles may not be added or removed"},
		{name: "changing a job not started yet", old: func() *paddlev1.PaddleJob { return testutil.MakePaddleJob("j", "ns").PS(1).Workers(2).Obj() },
			mutate: func(j *paddlev1.PaddleJob) { j.Spec.Intranet = paddlev1.IntranetService }},
		{name: "changing a suspended job's template", old: func() *paddlev1.PaddleJob {
			j := started()
			j.Spec.Suspend = ptr.To(true)
			return j
		}, mutate: func(j *paddlev1.PaddleJob) { j.Spec.Worker.Template.Spec.Containers[0].Image = "other:v2" }},
		// Kueue's start and stop: the templates' scheduling fields change in
		// the update that resumes or suspends the job.
		{name: "resuming a suspended job with a node selector", old: func() *paddlev1.PaddleJob {
			j := started()
			j.Spec.Suspend = ptr.To(true)
			return j
		}, mutate: func(j *paddlev1.PaddleJob) {
			j.Spec.Suspend = ptr.To(false)
			j.Spec.Worker.Template.Spec.NodeSelector = map[string]string{"pool": "a"}
		}},
		{name: "suspending a job and restoring its template", old: func() *paddlev1.PaddleJob {
			j := started()
			j.Spec.Worker.Template.Spec.NodeSelector = map[string]string{"pool": "a"}
			return j
		}, mutate: func(j *paddlev1.PaddleJob) {
			j.Spec.Suspend = ptr.To(true)
			j.Spec.Worker.Template.Spec.NodeSelector = nil
		}},
		{name: "moving a running job to another queue", old: func() *paddlev1.PaddleJob {
			j := started()
			j.Labels = map[string]string{paddlev1.KueueQueueNameLabel: "a"}
			return j
		}, mutate: func(j *paddlev1.PaddleJob) { j.Labels[paddlev1.KueueQueueNameLabel] = "b" },
			wantErr: "metadata.labels[kueue.x-k8s.io/queue-name]: Forbidden: may change only while the job is suspended"},
		{name: "moving a suspended job to another queue", old: func() *paddlev1.PaddleJob {
			j := started()
			j.Spec.Suspend = ptr.To(true)
			j.Labels = map[string]string{paddlev1.KueueQueueNameLabel: "a"}
			return j
		}, mutate: func(j *paddlev1.PaddleJob) { j.Labels[paddlev1.KueueQueueNameLabel] = "b" }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			old := tc.old()
			updated := old.DeepCopy()
			tc.mutate(updated)
			_, err := w.ValidateUpdate(context.Background(), old, updated)
			if (err != nil) != (tc.wantErr != "") || (err != nil && !strings.Contains(err.Error(), tc.wantErr)) {
				t.Errorf("error %v, want %q", err, tc.wantErr)
			}
		})
	}
}
