// Package webhook tests the PaddleJob admission webhook through a real API
// server: rejections and warnings as clients see them, defaults, and the
// operator's self-issued serving certificate, which every test's requests
// go through.
package webhook

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap/zapcore"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/internal/kube"
	"github.com/paddlejob/paddlejob/internal/testutil"
	"github.com/paddlejob/paddlejob/internal/testutil/testenv"
	pjclient "github.com/paddlejob/paddlejob/pkg/client"
)

var (
	env *testenv.Env
	k8s client.Client
	// warnings collects the warnings the API server sent k8s's requests.
	warnings = &warningLog{}
)

type warningLog struct {
	mu   sync.Mutex
	msgs []string
}

func (w *warningLog) HandleWarningHeader(_ int, _ string, msg string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.msgs = append(w.msgs, msg)
}

func (w *warningLog) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.msgs
	w.msgs = nil
	return out
}

func TestMain(m *testing.M) {
	logf.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.Level(zapcore.ErrorLevel)))
	var err error
	env, err = testenv.Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := run(m)
	_ = env.Stop()
	os.Exit(code)
}

func run(m *testing.M) int {
	cfg := rest.CopyConfig(env.Config)
	cfg.WarningHandler = warnings
	var err error
	if k8s, err = kube.NewClient(cfg); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	stop, err := startOperator()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer stop()
	return m.Run()
}

func newNamespace(t *testing.T) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "wh-"}}
	if err := k8s.Create(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	return ns.Name
}

func TestRejectsWhatTheSchemaCannot(t *testing.T) {
	ns := newNamespace(t)
	job := testutil.MakePaddleJob("bad", ns).Workers(2).Obj()
	job.Spec.Worker.Template.Spec.Containers[0].Name = "wait-for-endpoints"
	err := k8s.Create(context.Background(), job)
	want := `admission webhook "vpaddlejob.batch.paddlepaddle.org" denied the request: PaddleJob.batch.paddlepaddle.org "bad" is invalid: spec.worker.template.spec.containers[0].name: Invalid value: "wait-for-endpoints": is reserved for a container of the operator's`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("error %v\nwant %q", err, want)
	}
}

// The webhook refuses what would break the job's port arithmetic or its
// environment contract, naming the field; nothing is stored.
func TestRejectsGPUCountsAndContractOverrides(t *testing.T) {
	ns := newNamespace(t)
	tests := []struct {
		name string
		job  *paddlev1.PaddleJob
		want string
	}{{
		name: "gpus",
		job:  testutil.MakePaddleJob("gpus", ns).Workers(2).GPUs(paddlev1.ReplicaWorker, 100000).Obj(),
		want: `spec.worker.template.spec.containers[0].resources.limits[nvidia.com/gpu]: Invalid value: "100k": must be at most 1024`,
	}, {
		name: "trainer-id",
		job:  testutil.MakePaddleJob("trainer-id", ns).Workers(2).Env(paddlev1.ReplicaWorker, "PADDLE_TRAINER_ID", "0").Obj(),
		want: `spec.worker.template.spec.containers[0].env[0].name: Invalid value: "PADDLE_TRAINER_ID": is set by the operator`,
	}, {
		name: "min-resources",
		job: testutil.MakePaddleJob("min-resources", ns).Workers(2).
			SchedulingPolicy(paddlev1.SchedulingPolicy{MinResources: corev1.ResourceList{"cpu": resource.MustParse("-2")}}).Obj(),
		want: `spec.schedulingPolicy.minResources[cpu]: Invalid value: "-2": must be greater than or equal to 0`,
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := k8s.Create(context.Background(), tc.job)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v\nwant %q", err, tc.want)
			}
			if err := k8s.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: tc.job.Name}, &paddlev1.PaddleJob{}); err == nil || !strings.Contains(err.Error(), "not found") {
				t.Errorf("the job was stored: %v", err)
			}
		})
	}
}

// A template the API server would refuse for every pod is refused with the
// job, in the API server's words (a server-side dry run of each role's first
// pod); nothing is stored. (Two containers of one name the CRD's schema
// already refuses.)
func TestRefusesPodTemplatesTheAPIServerRefuses(t *testing.T) {
	ns := newNamespace(t)
	tests := []struct {
		name string
		edit func(*corev1.PodSpec)
		want []string
	}{{
		name: "no-image",
		edit: func(s *corev1.PodSpec) { s.Containers[0].Image = "" },
		want: []string{"spec.worker.template: Invalid value", "the API server refuses its pods", "spec.containers[0].image: Required value"},
	}, {
		name: "undeclared-volume",
		edit: func(s *corev1.PodSpec) {
			s.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
		},
		want: []string{"spec.worker.template: Invalid value", `spec.containers[0].volumeMounts[0].name: Not found: "data"`},
	}, {
		name: "negative-cpu",
		edit: func(s *corev1.PodSpec) {
			s.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("-1")}
		},
		want: []string{"spec.worker.template: Invalid value", "spec.containers[0].resources.requests[cpu]", "must be greater than or equal to 0"},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			job := testutil.MakePaddleJob(tc.name, ns).Workers(2).Obj()
			tc.edit(&job.Spec.Worker.Template.Spec)
			err := k8s.Create(context.Background(), job)
			for _, want := range tc.want {
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Errorf("error %v\nwant %q", err, want)
				}
			}
			if err := k8s.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: job.Name}, &paddlev1.PaddleJob{}); err == nil || !strings.Contains(err.Error(), "not found") {
				t.Errorf("the job was stored: %v", err)
			}
		})
	}
	// A valid job's dry runs leave no pod behind: the only pods are those
	// the controller makes, by their own names.
	ok := testutil.MakePaddleJob("fine", ns).PS(1).Workers(2).Obj()
	if err := k8s.Create(context.Background(), ok); err != nil {
		t.Fatal(err)
	}
	var pods corev1.PodList
	if err := k8s.List(context.Background(), &pods, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		if p.GenerateName != "" {
			t.Errorf("a dry run's pod was stored: %s", p.Name)
		}
	}
}

func TestWarnsAboutDeprecatedFieldsAndDefaults(t *testing.T) {
	ns := newNamespace(t)
	job := testutil.MakePaddleJob("demo", ns).PS(1).Workers(2).Obj()
	job.Spec.CleanPolicy = paddlev1.CleanPodPolicyOnCompletion // paddle-operator's example 5 spells it so
	warnings.take()
	if err := k8s.Create(context.Background(), job); err != nil {
		t.Fatal(err)
	}
	got := strings.Join(warnings.take(), "\n")
	if !strings.Contains(got, "spec.cleanPolicy is deprecated (paddle-operator's spelling): use spec.cleanPodPolicy") {
		t.Errorf("warnings %q", got)
	}
	stored := &paddlev1.PaddleJob{}
	if err := k8s.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: "demo"}, stored); err != nil {
		t.Fatal(err)
	}
	// The alias is stored as written (the operator resolves it, webhook or
	// not): re-applying the manifest with another cleanPolicy then changes it
	// rather than disagreeing with a cleanPodPolicy the user never set.
	if stored.Spec.CleanPolicy != paddlev1.CleanPodPolicyOnCompletion || stored.Spec.CleanPodPolicy != "" ||
		stored.Spec.EffectiveCleanPodPolicy() != paddlev1.CleanPodPolicyOnCompletion || stored.Spec.Worker.RestartPolicy != paddlev1.RestartPolicyNever {
		t.Errorf("defaults: cleanPolicy %q, cleanPodPolicy %q, worker restartPolicy %q", stored.Spec.CleanPolicy, stored.Spec.CleanPodPolicy, stored.Spec.Worker.RestartPolicy)
	}
}

func TestStartedJobsKeepWhatTheirPodsWereMadeFrom(t *testing.T) {
	ns := newNamespace(t)
	job := testutil.MakePaddleJob("run", ns).Workers(2).Obj()
	if err := k8s.Create(context.Background(), job); err != nil {
		t.Fatal(err)
	}
	// The operator started it (its pods exist): the template is fixed, replicas are not.
	job = waitStarted(t, ns, "run")
	changed := job.DeepCopy()
	changed.Spec.Worker.Template.Spec.Containers[0].Image = "paddle:v2"
	err := k8s.Update(context.Background(), changed)
	if err == nil || !strings.Contains(err.Error(), "spec.worker.template: Forbidden: may not change once the job has started; suspend it first") {
		t.Errorf("changing a running job's image: %v", err)
	}
	scaled := job.DeepCopy()
	scaled.Spec.Worker.Replicas = 3
	if err := k8s.Update(context.Background(), scaled); err != nil {
		t.Errorf("scaling a running job: %v", err)
	}
}

// An elastic job's elastic fields shape every pod's launcher (PADDLE_MASTER,
// PADDLE_NNODES, the elastic level and timeout): once it runs they are fixed
// like its template, refused by their paths, while scaling within the bounds
// is not; suspended, the job may change them.
func TestStartedElasticJobsKeepTheirElasticFields(t *testing.T) {
	ns := newNamespace(t)
	job := testutil.MakePaddleJob("el", ns).Workers(2).Elastic(1, 3, "http://127.0.0.1:2379").Obj()
	if err := k8s.Create(context.Background(), job); err != nil {
		t.Fatal(err)
	}
	job = waitStarted(t, ns, "el")
	for _, tc := range []struct {
		edit func(*paddlev1.PaddleJobSpec)
		want string
	}{
		{func(s *paddlev1.PaddleJobSpec) { s.ElasticPolicy.MaxReplicas = ptrTo[int32](4) }, "spec.elasticPolicy: Forbidden: may not change once the job has started; suspend it first"},
		{func(s *paddlev1.PaddleJobSpec) { s.ElasticPolicy.EtcdEndpoints = []string{"http://127.0.0.2:2379"} }, "spec.elasticPolicy: Forbidden"},
		{func(s *paddlev1.PaddleJobSpec) { s.Elastic = ptrTo[int32](2) }, "spec.elastic: Forbidden"},
		{func(s *paddlev1.PaddleJobSpec) { s.Worker.Limits = ptrTo[int32](3) }, "spec.worker.limits: Forbidden"},
	} {
		changed := job.DeepCopy()
		tc.edit(&changed.Spec)
		if err := k8s.Update(context.Background(), changed); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("error %v\nwant %q", err, tc.want)
		}
	}
	scaled := job.DeepCopy()
	scaled.Spec.Worker.Replicas = 3
	if err := k8s.Update(context.Background(), scaled); err != nil {
		t.Fatalf("scaling within the bounds: %v", err)
	}
	suspended := scaled.DeepCopy()
	suspended.Spec.Suspend = ptrTo(true)
	suspended.Spec.ElasticPolicy.MaxReplicas = ptrTo[int32](4)
	if err := k8s.Update(context.Background(), suspended); err != nil {
		t.Errorf("suspending the job with new bounds: %v", err)
	}
}

// What the schema can refuse it refuses, webhook or not, naming the field
// and what it may be.
func TestSchemaRefusesWhatItCan(t *testing.T) {
	ns := newNamespace(t)
	gang := testutil.MakePaddleJob("gang", ns).Workers(2).SchedulingPolicy(paddlev1.SchedulingPolicy{MinAvailable: ptrTo[int32](3)}).Obj()
	host := testutil.MakePaddleJob("host", ns).Workers(2).Obj()
	host.Spec.Worker.Template.Spec.HostNetwork = true
	for _, tc := range []struct {
		job  *paddlev1.PaddleJob
		want string
	}{
		{gang, "spec.schedulingPolicy.minAvailable: Invalid value: must be at most the pods of the job: the replicas of spec.ps, spec.worker and spec.heter together"},
		{host, "spec.worker.template.spec.hostNetwork may be true only with spec.intranet: Host"},
	} {
		if err := k8s.Create(context.Background(), tc.job); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v\nwant %q", tc.job.Name, err, tc.want)
		}
	}
}

func ptrTo[T any](v T) *T { return &v }

// waitStarted waits, watching the job, until the operator has started it
// (its status has a phase) and returns it.
func waitStarted(t *testing.T, ns, name string) *paddlev1.PaddleJob {
	t.Helper()
	c, err := pjclient.New(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	job, err := c.WaitFor(context.Background(), ns, name, func(j *paddlev1.PaddleJob) (bool, error) {
		return j.Status.Phase != "", nil
	}, 30*time.Second)
	if err != nil {
		t.Fatalf("the operator did not start %s: %v", name, err)
	}
	return job
}
