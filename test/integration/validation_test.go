package integration

import (
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/internal/testutil"
)

const worker = `
  worker:
    replicas: 2
    template:
      spec:
        containers:
        - name: paddle
          image: paddle:v1`

// The API server itself rejects invalid jobs, with messages that name the
// field and what is allowed — before the operator sees them.
// invalidJob is a PaddleJob (the YAML after its apiVersion and kind) the
// API server must refuse, and what its error must say.
type invalidJob struct {
	name string
	yaml string
	want []string // substrings of the error
}

// invalidJobs are the jobs the API server refuses, one rule broken each.
var invalidJobs = []invalidJob{{
	name: "unknown cleanPodPolicy",
	yaml: "metadata: {name: a}\nspec:\n  cleanPodPolicy: Sometimes" + worker,
	want: []string{"spec.cleanPodPolicy", `Unsupported value: "Sometimes"`, `"Always", "Never", "OnFailure", "OnCompletion"`},
}, {
	name: "negative replicas",
	yaml: "metadata: {name: a}\nspec:\n  worker:\n    replicas: -1\n    template:\n      spec:\n        containers: [{name: paddle, image: p}]",
	want: []string{"spec.worker.replicas", "should be greater than or equal to 1"},
}, {
	name: "unknown intranet",
	yaml: "metadata: {name: a}\nspec:\n  intranet: Overlay" + worker,
	want: []string{"spec.intranet", `"PodIP", "Service", "Host"`},
}, {
	name: "withGloo out of range",
	yaml: "metadata: {name: a}\nspec:\n  withGloo: 3" + worker,
	want: []string{"spec.withGloo", "less than or equal to 2"},
}, {
	name: "name too long for its pod names",
	yaml: "metadata: {name: " + strings.Repeat("a", 52) + "}\nspec:" + worker,
	want: []string{"metadata.name must be at most 51 characters"},
}, {
	name: "name that cannot name a Service",
	yaml: "metadata: {name: 1job}\nspec:" + worker,
	want: []string{"metadata.name must be a DNS-1035 label"},
}, {
	name: "ps without worker",
	yaml: "metadata: {name: a}\nspec:\n  ps:\n    replicas: 1\n    template:\n      spec:\n        containers: [{name: paddle, image: p}]",
	want: []string{"spec.worker is required"},
}, {
	name: "heter without ps",
	yaml: "metadata: {name: a}\nspec:\n  heter:\n    replicas: 1\n    template:\n      spec:\n        containers: [{name: paddle, image: p}]" + worker,
	want: []string{"spec.heter needs spec.ps and spec.worker"},
}, {
	name: "template without containers",
	yaml: "metadata: {name: a}\nspec:\n  worker:\n    replicas: 1\n    template:\n      spec:\n        containers: []",
	want: []string{"spec.worker", "template.spec.containers must hold at least one container"},
}, {
	name: "restartPolicy Always never completes",
	yaml: "metadata: {name: a}\nspec:\n  worker:\n    replicas: 1\n    template:\n      spec:\n        restartPolicy: Always\n        containers: [{name: paddle, image: p}]",
	want: []string{"spec.worker", "restartPolicy must be Never or OnFailure"},
}, {
	name: "cleanPolicy alias disagreeing with cleanPodPolicy",
	yaml: "metadata: {name: a}\nspec:\n  cleanPodPolicy: Never\n  cleanPolicy: Always" + worker,
	want: []string{"spec.cleanPolicy is a deprecated alias of spec.cleanPodPolicy"},
}, {
	name: "activeDeadlineSeconds past what a time.Duration holds",
	yaml: "metadata: {name: a}\nspec:\n  activeDeadlineSeconds: 9223372037" + worker,
	want: []string{"spec.activeDeadlineSeconds", "less than or equal to 3153600000"},
}, {
	name: "negative backoffLimit",
	yaml: "metadata: {name: a}\nspec:\n  backoffLimit: -1" + worker,
	want: []string{"spec.backoffLimit", "greater than or equal to 0"},
}, {
	name: "activeDeadlineSeconds of 0",
	yaml: "metadata: {name: a}\nspec:\n  activeDeadlineSeconds: 0" + worker,
	want: []string{"spec.activeDeadlineSeconds", "greater than or equal to 1"},
}, {
	name: "negative ttlSecondsAfterFinished",
	yaml: "metadata: {name: a}\nspec:\n  ttlSecondsAfterFinished: -5" + worker,
	want: []string{"spec.ttlSecondsAfterFinished", "greater than or equal to 0"},
}, {
	name: "negative withGloo",
	yaml: "metadata: {name: a}\nspec:\n  withGloo: -1" + worker,
	want: []string{"spec.withGloo", "greater than or equal to 0"},
}, {
	name: "negative elastic level",
	yaml: "metadata: {name: a}\nspec:\n  elastic: -1" + worker,
	want: []string{"spec.elastic", "greater than or equal to 0"},
}, {
	name: "more workers than a job may have",
	yaml: "metadata: {name: a}\nspec:\n  worker:\n    replicas: 10001\n    template:\n      spec:\n        containers: [{name: paddle, image: p}]",
	want: []string{"spec.worker.replicas", "less than or equal to 10000"},
}, {
	name: "unknown restartPolicy of a role",
	yaml: "metadata: {name: a}\nspec:\n  worker:\n    replicas: 2\n    restartPolicy: Always\n    template:\n      spec:\n        containers: [{name: paddle, image: p}]",
	want: []string{"spec.worker.restartPolicy", `"Never", "OnFailure", "ExitCode"`},
}, {
	name: "retryableExitCodes without restartPolicy ExitCode",
	yaml: "metadata: {name: a}\nspec:\n  worker:\n    replicas: 2\n    retryableExitCodes: [137]\n    template:\n      spec:\n        containers: [{name: paddle, image: p}]",
	want: []string{"spec.worker", "retryableExitCodes needs restartPolicy ExitCode"},
}, {
	name: "a retryable exit code above 255",
	yaml: "metadata: {name: a}\nspec:\n  worker:\n    replicas: 2\n    restartPolicy: ExitCode\n    retryableExitCodes: [137, 300]\n    template:\n      spec:\n        containers: [{name: paddle, image: p}]",
	want: []string{"spec.worker.retryableExitCodes[1]", "less than or equal to 255"},
}, {
	name: "a negative retryable exit code",
	yaml: "metadata: {name: a}\nspec:\n  worker:\n    replicas: 2\n    restartPolicy: ExitCode\n    retryableExitCodes: [-1]\n    template:\n      spec:\n        containers: [{name: paddle, image: p}]",
	want: []string{"spec.worker.retryableExitCodes[0]", "greater than or equal to 0"},
}, {
	name: "a minResources quantity that is none",
	yaml: "metadata: {name: a}\nspec:\n  schedulingPolicy:\n    minResources: {cpu: lots}" + worker,
	want: []string{"spec.schedulingPolicy.minResources.cpu", "should match"},
}, {
	name: "elastic requests above limits",
	yaml: "metadata: {name: a}\nspec:\n  worker:\n    replicas: 2\n    requests: 3\n    limits: 2\n    template:\n      spec:\n        containers: [{name: paddle, image: p}]",
	want: []string{"spec.worker", "requests (minimal replicas) must not exceed limits"},
}, {
	name: "replicas above the elastic limits",
	yaml: "metadata: {name: a}\nspec:\n  worker:\n    replicas: 4\n    limits: 3\n    template:\n      spec:\n        containers: [{name: paddle, image: p}]",
	want: []string{"spec.worker.replicas is above spec.worker.limits"},
}, {
	name: "replicas below the elastic requests",
	yaml: "metadata: {name: a}\nspec:\n  worker:\n    replicas: 1\n    requests: 2\n    template:\n      spec:\n        containers: [{name: paddle, image: p}]",
	want: []string{"spec.worker.replicas is below spec.worker.requests"},
}, {
	name: "elastic parameter-server job",
	yaml: "metadata: {name: a}\nspec:\n  elasticPolicy: {minReplicas: 1}\n  ps:\n    replicas: 1\n    template:\n      spec:\n        containers: [{name: paddle, image: p}]" + worker,
	want: []string{"elastic training", "is collective only", "remove spec.ps, or the elastic fields"},
}, {
	name: "parameter-server job with paddle-operator's worker.limits",
	yaml: "metadata: {name: a}\nspec:\n  ps:\n    replicas: 1\n    template:\n      spec:\n        containers: [{name: paddle, image: p}]\n  worker:\n    replicas: 2\n    limits: 3\n    template:\n      spec:\n        containers: [{name: paddle, image: p}]",
	want: []string{"is collective only"},
}, {
	name: "elasticPolicy minReplicas above maxReplicas",
	yaml: "metadata: {name: a}\nspec:\n  elasticPolicy: {minReplicas: 3, maxReplicas: 2}" + worker,
	want: []string{"spec.elasticPolicy", "elasticPolicy.minReplicas must not exceed elasticPolicy.maxReplicas"},
}, {
	name: "replicas below elasticPolicy.minReplicas",
	yaml: "metadata: {name: a}\nspec:\n  elasticPolicy: {minReplicas: 3}" + worker,
	want: []string{"spec.worker.replicas is below spec.elasticPolicy.minReplicas"},
}, {
	name: "replicas above elasticPolicy.maxReplicas",
	yaml: "metadata: {name: a}\nspec:\n  elasticPolicy: {maxReplicas: 1}" + worker,
	want: []string{"spec.worker.replicas is above spec.elasticPolicy.maxReplicas"},
}, {
	name: "elasticPolicy minReplicas of 0",
	yaml: "metadata: {name: a}\nspec:\n  elasticPolicy: {minReplicas: 0}" + worker,
	want: []string{"spec.elasticPolicy.minReplicas", "greater than or equal to 1"},
}, {
	name: "elasticPolicy timeoutSeconds of 0",
	yaml: "metadata: {name: a}\nspec:\n  elasticPolicy: {timeoutSeconds: 0}" + worker,
	want: []string{"spec.elasticPolicy.timeoutSeconds", "greater than or equal to 1"},
}, {
	name: "schedulingPolicy minAvailable of 0",
	yaml: "metadata: {name: a}\nspec:\n  schedulingPolicy: {minAvailable: 0}" + worker,
	want: []string{"spec.schedulingPolicy.minAvailable", "greater than or equal to 1"},
}, {
	name: "cleanPodPolicy in the wrong case",
	yaml: "metadata: {name: a}\nspec:\n  cleanPodPolicy: always" + worker,
	want: []string{"spec.cleanPodPolicy", `Unsupported value: "always"`},
}, {
	name: "hostNetwork on workers in PodIP intranet",
	yaml: "metadata: {name: a}\nspec:\n  worker:\n    replicas: 2\n    template:\n      spec:\n        hostNetwork: true\n        containers: [{name: paddle, image: p}]",
	want: []string{"spec.worker.template.spec.hostNetwork may be true only with spec.intranet: Host"},
}, {
	name: "hostNetwork on a pserver in Service intranet",
	yaml: "metadata: {name: a}\nspec:\n  intranet: Service\n  ps:\n    replicas: 1\n    template:\n      spec:\n        hostNetwork: true\n        containers: [{name: paddle, image: p}]" + worker,
	want: []string{"spec.ps.template.spec.hostNetwork may be true only with spec.intranet: Host"},
}, {
	name: "hostNetwork on a heter trainer",
	yaml: "metadata: {name: a}\nspec:\n  ps:\n    replicas: 1\n    template:\n      spec:\n        containers: [{name: paddle, image: p}]\n  heter:\n    replicas: 1\n    template:\n      spec:\n        hostNetwork: true\n        containers: [{name: paddle, image: p}]" + worker,
	want: []string{"spec.heter.template.spec.hostNetwork may be true only with spec.intranet: Host"},
}, {
	name: "unknown field, with kubectl's strict field validation",
	yaml: "metadata: {name: a}\nspec:\n  cleanPodPolcy: Never" + worker,
	want: []string{`unknown field "spec.cleanPodPolcy"`},
}}

func TestInvalidJobsAreRejectedByTheAPIServer(t *testing.T) {
	ns := newNamespace(t)
	if len(invalidJobs) < 30 {
		t.Errorf("%d invalid jobs: keep at least 30", len(invalidJobs))
	}
	for _, tc := range invalidJobs {
		t.Run(tc.name, func(t *testing.T) {
			tc.checkRefused(t, ns)
		})
	}
}

// checkRefused creates the job in namespace ns with strict field
// validation and checks that the API server refuses it, saying every
// substring wanted, before anything is stored.
func (tc invalidJob) checkRefused(t *testing.T, ns string) {
	t.Helper()
	obj := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte("apiVersion: batch.paddlepaddle.org/v1\nkind: PaddleJob\n"+tc.yaml), &obj.Object); err != nil {
		t.Fatal(err)
	}
	obj.SetNamespace(ns)
	err := k8s.Create(ctx(t), obj, client.FieldValidation("Strict"))
	if err == nil {
		t.Fatalf("the API server accepted it")
	}
	t.Logf("rejected: %v", err)
	for _, w := range tc.want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q\ndoes not say %q", err, w)
		}
	}
	// Refused before anything was stored.
	if err := k8s.Get(ctx(t), types.NamespacedName{Namespace: ns, Name: obj.GetName()}, &paddlev1.PaddleJob{}); !isNotFound(err) {
		t.Errorf("the job was stored: get says %v", err)
	}
}

// spec.managedBy is immutable: set, changed or cleared after creation, the
// API server refuses it (MultiKueue relies on the value staying put).
func TestManagedByIsImmutable(t *testing.T) {
	ns := newNamespace(t)
	for _, tc := range []struct {
		name       string
		from, to   *string
		wantRefuse bool
	}{
		{name: "set later", to: ptr.To(paddlev1.ManagedByMultiKueue), wantRefuse: true},
		{name: "changed", from: ptr.To(paddlev1.ManagedByMultiKueue), to: ptr.To("example.com/other"), wantRefuse: true},
		{name: "cleared", from: ptr.To(paddlev1.ManagedByMultiKueue), wantRefuse: true},
		{name: "kept", from: ptr.To(paddlev1.ManagedByMultiKueue), to: ptr.To(paddlev1.ManagedByMultiKueue)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			job := testutil.MakePaddleJob("m-"+strings.ReplaceAll(tc.name, " ", "-"), ns).Workers(1).Suspend(true).Obj()
			job.Spec.ManagedBy = tc.from
			if err := k8s.Create(ctx(t), job); err != nil {
				t.Fatal(err)
			}
			job.Spec.ManagedBy = tc.to
			job.Labels = map[string]string{"touched": "yes"} // an update even when managedBy is kept
			err := k8s.Update(ctx(t), job)
			switch {
			case tc.wantRefuse && (err == nil || !strings.Contains(err.Error(), "spec.managedBy is immutable")):
				t.Errorf("update: %v, want spec.managedBy is immutable", err)
			case !tc.wantRefuse && err != nil:
				t.Errorf("update refused: %v", err)
			}
		})
	}
}

// Static defaults are filled in by the API server.
func TestSchemaDefaults(t *testing.T) {
	ns := newNamespace(t)
	obj := &unstructured.Unstructured{}
	src := "apiVersion: batch.paddlepaddle.org/v1\nkind: PaddleJob\nmetadata: {name: d}\nspec:\n  worker:\n    template:\n      spec:\n        containers: [{name: paddle, image: p}]"
	if err := yaml.Unmarshal([]byte(src), &obj.Object); err != nil {
		t.Fatal(err)
	}
	obj.SetNamespace(ns)
	if err := k8s.Create(ctx(t), obj); err != nil {
		t.Fatal(err)
	}
	job := getJob(t, ns, "d")
	if job.Spec.Intranet != "PodIP" || job.Spec.Worker.Replicas != 1 {
		t.Errorf("defaults: intranet %q, worker replicas %d", job.Spec.Intranet, job.Spec.Worker.Replicas)
	}
}

// kubectl explain reads the CRD's schema: every PaddleJob field is explained.
func TestEveryFieldIsDocumentedForKubectlExplain(t *testing.T) {
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := k8s.Get(ctx(t), types.NamespacedName{Name: "paddlejobs.batch.paddlepaddle.org"}, crd); err != nil {
		t.Fatal(err)
	}
	if got := crd.Spec.Names.ShortNames; len(got) != 1 || got[0] != "pdj" {
		t.Errorf("short names %v, want [pdj]", got)
	}
	v := crd.Spec.Versions[0]
	if v.Subresources == nil || v.Subresources.Status == nil {
		t.Error("no status subresource")
	}
	var cols []string
	for _, c := range v.AdditionalPrinterColumns {
		cols = append(cols, c.Name)
	}
	if strings.Join(cols, ",") != "Phase,Mode,PS,Worker,Heter,Progress,Metric,Value,Age" {
		t.Errorf("printer columns %v", cols)
	}
	spec := v.Schema.OpenAPIV3Schema.Properties["spec"]
	var undocumented []string
	var walk func(path string, s apiextensionsv1.JSONSchemaProps)
	walk = func(path string, s apiextensionsv1.JSONSchemaProps) {
		for name, p := range s.Properties {
			if p.Description == "" {
				undocumented = append(undocumented, path+"."+name)
			}
			if name != "template" && name != "minResources" {
				walk(path+"."+name, p)
			}
		}
	}
	walk("spec", spec)
	walk("status", v.Schema.OpenAPIV3Schema.Properties["status"])
	if len(undocumented) > 0 {
		t.Errorf("fields without a description: %v", undocumented)
	}
	if d := spec.Properties["worker"].Description; !strings.Contains(d, "trainers") {
		t.Errorf("kubectl explain pdj.spec.worker would say %q", d)
	}
}
