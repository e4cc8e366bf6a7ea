package validation_test

import (
	"strings"
	"testing"

	"k8s.io/utils/ptr"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/internal/operator/validation"
	"github.com/paddlejob/paddlejob/internal/testutil"
)

// A started job's Fixed fields may not change unless it is suspended; the
// others may. Every Fixed field of PodFields is refused by its path.
func TestValidateUpdate(t *testing.T) {
	tests := updateCases()
	v := validator()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			old := tc.old()
			updated := old.DeepCopy()
			tc.mutate(updated)
			errs := v.ValidateUpdate(old, updated)
			if tc.wantErr == "" {
				wantFieldErrors(t, errs)
				return
			}
			wantFieldErrors(t, errs, tc.wantErr)
			if len(errs) != 1 {
				t.Errorf("%d errors, want one: %v", len(errs), errs)
			}
		})
	}
}

type updateCase struct {
	name    string
	old     func() *paddlev1.PaddleJob
	mutate  func(*paddlev1.PaddleJob)
	wantErr string
}

// updateCases are TestValidateUpdate's.
func updateCases() []updateCase {
	started := func(w *testutil.JobWrapper) func() *paddlev1.PaddleJob {
		return func() *paddlev1.PaddleJob {
			return w.Status(paddlev1.PaddleJobStatus{Phase: paddlev1.PaddleJobRunning}).Obj()
		}
	}
	ps := started(testutil.MakePaddleJob("j", "ns").PS(1).Workers(2))
	elastic := started(testutil.MakePaddleJob("j", "ns").Workers(2).Elastic(1, 3, "http://etcd:2379"))
	suspended := func() *paddlev1.PaddleJob {
		j := ps()
		j.Spec.Suspend = ptr.To(true)
		return j
	}
	return []updateCase{
		{name: "scaling a running job", old: ps, mutate: func(j *paddlev1.PaddleJob) { j.Spec.Worker.Replicas = 4 }},
		{name: "suspending it", old: ps, mutate: func(j *paddlev1.PaddleJob) { j.Spec.Suspend = ptr.To(true) }},
		{name: "changing its restart policy and scope (new pods follow)", old: ps, mutate: func(j *paddlev1.PaddleJob) {
			j.Spec.Worker.RestartPolicy = paddlev1.RestartPolicyOnFailure
			j.Spec.RestartScope = paddlev1.RestartScopePod
			j.Spec.BackoffLimit = ptr.To[int32](9)
		}},
		{name: "changing its image", old: ps, mutate: func(j *paddlev1.PaddleJob) {
			j.Spec.Worker.Template.Spec.Containers[0].Image = "other:v2"
		}, wantErr: "spec.worker.template: Forbidden: may not change once the job has started; suspend it first (spec.suspend), or delete and recreate it"},
		{name: "changing its intranet", old: ps, mutate: func(j *paddlev1.PaddleJob) { j.Spec.Intranet = paddlev1.IntranetService },
			wantErr: "spec.intranet: Forbidden: may not change once the job has started"},
		{name: "setting its intranet to the default it had", old: ps, mutate: func(j *paddlev1.PaddleJob) { j.Spec.Intranet = paddlev1.IntranetPodIP }},
		{name: "changing its Gloo level", old: ps, mutate: func(j *paddlev1.PaddleJob) { j.Spec.WithGloo = ptr.To[int32](1) },
			wantErr: "spec.withGloo: Forbidden"},
		{name: "changing its scheduling policy", old: ps, mutate: func(j *paddlev1.PaddleJob) { j.Spec.SchedulingPolicy = &paddlev1.SchedulingPolicy{Queue: "q"} },
			wantErr: "spec.schedulingPolicy: Forbidden"},
		{name: "adding a role", old: ps, mutate: func(j *paddlev1.PaddleJob) { j.Spec.Heter = j.Spec.Worker.DeepCopy() },
			wantErr: "spec: Forbidden: roles (spec.ps, spec.worker, spec.heter) may not be added or removed once the job has started"},
		{name: "changing an elastic job's bounds", old: elastic, mutate: func(j *paddlev1.PaddleJob) { j.Spec.ElasticPolicy.MaxReplicas = ptr.To[int32](4) },
			wantErr: "spec.elasticPolicy: Forbidden: may not change once the job has started"},
		{name: "changing an elastic job's etcd", old: elastic, mutate: func(j *paddlev1.PaddleJob) { j.Spec.ElasticPolicy.EtcdEndpoints = []string{"http://other:2379"} },
			wantErr: "spec.elasticPolicy: Forbidden"},
		{name: "changing an elastic job's level", old: elastic, mutate: func(j *paddlev1.PaddleJob) { j.Spec.Elastic = ptr.To[int32](2) },
			wantErr: "spec.elastic: Forbidden"},
		{name: "making a running job elastic", old: started(testutil.MakePaddleJob("j", "ns").Workers(2)), mutate: func(j *paddlev1.PaddleJob) { j.Spec.Worker.Limits = ptr.To[int32](3) },
			wantErr: "spec.worker.limits: Forbidden"},
		{name: "changing paddle-operator's elastic minimum", old: elastic, mutate: func(j *paddlev1.PaddleJob) { j.Spec.Worker.Requests = ptr.To[int32](1) },
			wantErr: "spec.worker.requests: Forbidden"},
		{name: "scaling an elastic job within its bounds", old: elastic, mutate: func(j *paddlev1.PaddleJob) { j.Spec.Worker.Replicas = 3 }},
		{name: "changing a job not started yet", old: func() *paddlev1.PaddleJob { return testutil.MakePaddleJob("j", "ns").PS(1).Workers(2).Obj() },
			mutate: func(j *paddlev1.PaddleJob) { j.Spec.Intranet = paddlev1.IntranetService }},
		{name: "changing a suspended job's template and elastic fields", old: suspended, mutate: func(j *paddlev1.PaddleJob) {
			j.Spec.Worker.Template.Spec.Containers[0].Image = "other:v2"
			j.Spec.WithGloo = ptr.To[int32](1)
		}},
		// Kueue's start and stop: the templates' scheduling fields change in
		// the update that resumes or suspends the job.
		{name: "resuming a suspended job with a node selector", old: suspended, mutate: func(j *paddlev1.PaddleJob) {
			j.Spec.Suspend = ptr.To(false)
			j.Spec.Worker.Template.Spec.NodeSelector = map[string]string{"pool": "a"}
		}},
		{name: "suspending a job and restoring its template", old: func() *paddlev1.PaddleJob {
			j := ps()
			j.Spec.Worker.Template.Spec.NodeSelector = map[string]string{"pool": "a"}
			return j
		}, mutate: func(j *paddlev1.PaddleJob) {
			j.Spec.Suspend = ptr.To(true)
			j.Spec.Worker.Template.Spec.NodeSelector = nil
		}},
		{name: "moving a running job to another queue", old: func() *paddlev1.PaddleJob {
			j := ps()
			j.Labels = map[string]string{paddlev1.KueueQueueNameLabel: "a"}
			return j
		}, mutate: func(j *paddlev1.PaddleJob) { j.Labels[paddlev1.KueueQueueNameLabel] = "b" },
			wantErr: "metadata.labels[kueue.x-k8s.io/queue-name]: Forbidden: may change only while the job is suspended (spec.suspend): Kueue admitted it to queue a"},
		{name: "moving a suspended job to another queue", old: func() *paddlev1.PaddleJob {
			j := suspended()
			j.Labels = map[string]string{paddlev1.KueueQueueNameLabel: "a"}
			return j
		}, mutate: func(j *paddlev1.PaddleJob) { j.Labels[paddlev1.KueueQueueNameLabel] = "b" }},
		{name: "an update that breaks a check of the spec", old: ps, mutate: func(j *paddlev1.PaddleJob) { j.Spec.Worker.Replicas = 10000 },
			wantErr: "spec.worker.replicas: Invalid value: 10000"},
	}
}

// The spec hash has one part per Fixed field: a change to one names it; a
// hash of an older format is trusted; a hash of fewer fields is compared on
// those it has.
func TestChangedFields(t *testing.T) {
	job := testutil.MakePaddleJob("j", "ns").Workers(2).Elastic(1, 3, "http://etcd:2379").Obj()
	recorded := validation.SpecHash(&job.Spec, paddlev1.ReplicaWorker)
	tests := []struct {
		name     string
		recorded string
		edit     func(*paddlev1.PaddleJobSpec)
		want     []string
	}{
		{name: "nothing changed", recorded: recorded, edit: func(*paddlev1.PaddleJobSpec) {}},
		{name: "a scale within the bounds", recorded: recorded, edit: func(s *paddlev1.PaddleJobSpec) { s.Worker.Replicas = 3 }},
		{name: "the restart policy (new pods follow it)", recorded: recorded, edit: func(s *paddlev1.PaddleJobSpec) { s.Worker.RestartPolicy = paddlev1.RestartPolicyNever }},
		{name: "the image", recorded: recorded, edit: func(s *paddlev1.PaddleJobSpec) { s.Worker.Template.Spec.Containers[0].Image = "v2" },
			want: []string{"spec.worker.template"}},
		{name: "the elastic bounds and Gloo", recorded: recorded, edit: func(s *paddlev1.PaddleJobSpec) {
			s.ElasticPolicy.MaxReplicas = ptr.To[int32](5)
			s.WithGloo = ptr.To[int32](1)
		}, want: []string{"spec.withGloo", "spec.elasticPolicy"}},
		{name: "a role added", recorded: recorded, edit: func(s *paddlev1.PaddleJobSpec) { s.PS = s.Worker.DeepCopy() },
			want: []string{"the roles (spec.ps, spec.worker, spec.heter)"}},
		{name: "an older operator's hash is trusted", recorded: "0123456789abcdef-0123456789abcdef",
			edit: func(s *paddlev1.PaddleJobSpec) { s.Worker.Template.Spec.Containers[0].Image = "v2" }},
		{name: "a hash of the first fields only", recorded: strings.Join(strings.Split(recorded, ".")[:2], "."),
			edit: func(s *paddlev1.PaddleJobSpec) { s.ElasticPolicy.MaxReplicas = ptr.To[int32](5) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			spec := job.Spec.DeepCopy()
			tc.edit(spec)
			got := validation.ChangedFields(tc.recorded, spec, paddlev1.ReplicaWorker)
			if strings.Join(got, "|") != strings.Join(tc.want, "|") {
				t.Errorf("changed %q, want %q", got, tc.want)
			}
		})
	}
}

// The declaration's Fixed fields are those ValidateUpdate refuses and
// SpecHash records, each under the same name: a change to one is refused by
// the webhook and, without it, held back by the operator.
func TestFixedFieldsAreRefusedAndHashed(t *testing.T) {
	old := testutil.MakePaddleJob("j", "ns").Workers(2).Status(paddlev1.PaddleJobStatus{Phase: paddlev1.PaddleJobRunning}).Obj()
	edits := map[string]func(*paddlev1.PaddleJobSpec){
		"spec.<role>.template":  func(s *paddlev1.PaddleJobSpec) { s.Worker.Template.Labels = map[string]string{"a": "b"} },
		"spec.intranet":         func(s *paddlev1.PaddleJobSpec) { s.Intranet = paddlev1.IntranetHost },
		"spec.withGloo":         func(s *paddlev1.PaddleJobSpec) { s.WithGloo = ptr.To[int32](2) },
		"spec.schedulingPolicy": func(s *paddlev1.PaddleJobSpec) { s.SchedulingPolicy = &paddlev1.SchedulingPolicy{} },
		"spec":                  func(s *paddlev1.PaddleJobSpec) { s.PS = s.Worker.DeepCopy() },
		"spec.elastic":          func(s *paddlev1.PaddleJobSpec) { s.Elastic = ptr.To[int32](1) },
		"spec.elasticPolicy":    func(s *paddlev1.PaddleJobSpec) { s.ElasticPolicy = &paddlev1.ElasticPolicy{} },
		"spec.worker.requests":  func(s *paddlev1.PaddleJobSpec) { s.Worker.Requests = ptr.To[int32](1) },
		"spec.worker.limits":    func(s *paddlev1.PaddleJobSpec) { s.Worker.Limits = ptr.To[int32](3) },
	}
	recorded := validation.SpecHash(&old.Spec, paddlev1.ReplicaWorker)
	for _, f := range validation.PodFields {
		if f.Change != validation.Fixed {
			continue
		}
		t.Run(f.Path, func(t *testing.T) {
			edit, ok := edits[f.Path]
			if !ok {
				t.Fatalf("no edit of the Fixed field %s in this test", f.Path)
			}
			updated := old.DeepCopy()
			edit(&updated.Spec)
			path := strings.ReplaceAll(f.Path, "<role>", "worker")
			if errs := validator().ValidateUpdate(old, updated); len(errs) != 1 || errs[0].Field != path {
				t.Errorf("ValidateUpdate: %v, want one error at %s", errs, path)
			}
			if got := validation.ChangedFields(recorded, &updated.Spec, paddlev1.ReplicaWorker); len(got) != 1 {
				t.Errorf("the spec hash names %q, want the one field", got)
			}
		})
	}
}
