package launcher

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Cluster is all the launcher asks of the API server.
type Cluster interface {
	// JobPods lists the pods of a batch/v1 Job.
	JobPods(ctx context.Context, namespace, job string) ([]corev1.Pod, error)
	// JobParallelism is the Job's .spec.parallelism (1 when unset).
	JobParallelism(ctx context.Context, namespace, job string) (int, error)
}

// The labels batch/v1 puts on a Job's pods: the legacy one, and the
// prefixed one newer clusters add (some set only that).
var jobNameLabels = []string{"job-name", "batch.kubernetes.io/job-name"}

// NewCluster returns a Cluster backed by the API server cfg points at:
// REST clients of the two API groups it reads, with a scheme of those
// groups only. client-go's clientsets (typed ones too) register every API
// group, which would put them all in the binary every pod runs.
func NewCluster(cfg *rest.Config) (Cluster, error) {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, batchv1.AddToScheme} {
		if err := add(scheme); err != nil {
			return nil, err
		}
	}
	metav1.AddToGroupVersion(scheme, schema.GroupVersion{Version: "v1"})
	codecs := serializer.NewCodecFactory(scheme)
	client := func(gv schema.GroupVersion, apiPath string) (*rest.RESTClient, error) {
		c := rest.CopyConfig(cfg)
		c.GroupVersion, c.APIPath, c.NegotiatedSerializer = &gv, apiPath, codecs.WithoutConversion()
		if c.UserAgent == "" {
			c.UserAgent = rest.DefaultKubernetesUserAgent()
		}
		rc, err := rest.RESTClientFor(c)
		if err != nil {
			return nil, fmt.Errorf("creating a client for %s: %w", cfg.Host, err)
		}
		return rc, nil
	}
	core, err := client(corev1.SchemeGroupVersion, "/api")
	if err != nil {
		return nil, err
	}
	batch, err := client(batchv1.SchemeGroupVersion, "/apis")
	if err != nil {
		return nil, err
	}
	return &kubeCluster{core: core, batch: batch, params: runtime.NewParameterCodec(scheme)}, nil
}

type kubeCluster struct {
	core, batch *rest.RESTClient
	params      runtime.ParameterCodec
}

func (c *kubeCluster) JobPods(ctx context.Context, namespace, job string) ([]corev1.Pod, error) {
	seen := map[types.UID]bool{}
	var pods []corev1.Pod
	for _, label := range jobNameLabels {
		var list corev1.PodList
		err := c.core.Get().Namespace(namespace).Resource("pods").
			VersionedParams(&metav1.ListOptions{LabelSelector: label + "=" + job}, c.params).Do(ctx).Into(&list)
		if err != nil {
			return nil, fmt.Errorf("listing pods of job %s/%s: %w", namespace, job, err)
		}
		for _, p := range list.Items {
			if !seen[p.UID] {
				seen[p.UID] = true
				pods = append(pods, p)
			}
		}
	}
	return pods, nil
}

func (c *kubeCluster) JobParallelism(ctx context.Context, namespace, job string) (int, error) {
	var j batchv1.Job
	if err := c.batch.Get().Namespace(namespace).Resource("jobs").Name(job).Do(ctx).Into(&j); err != nil {
		return 0, fmt.Errorf("getting job %s/%s: %w", namespace, job, err)
	}
	if j.Spec.Parallelism == nil {
		return 1, nil
	}
	return int(*j.Spec.Parallelism), nil
}

// RESTConfig is the kubeconfig named by KUBECONFIG when it is set (local
// clusters, tests), else the pod's service account.
func RESTConfig(kubeconfig string) (*rest.Config, error) {
	if kubeconfig != "" {
		rules := &clientcmd.ClientConfigLoadingRules{Precedence: filepath.SplitList(kubeconfig)}
		cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, nil).ClientConfig()
		if err != nil {
			return nil, fmt.Errorf("loading KUBECONFIG=%s: %w", kubeconfig, err)
		}
		return cfg, nil
	}
	cfg, err := rest.InClusterConfig()
	if err != nil {
		return nil, fmt.Errorf("no KUBECONFIG and no in-cluster service account: %w", err)
	}
	return cfg, nil
}

// serviceAccountNamespaceFile holds the pod's namespace when a service
// account token is mounted.
const serviceAccountNamespaceFile = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// jobNamespace is JOB_NAMESPACE, else the pod's own namespace, else default.
func jobNamespace(fromEnv, namespaceFile string) string {
	if fromEnv != "" {
		return fromEnv
	}
	if b, err := os.ReadFile(namespaceFile); err == nil {
		if ns := strings.TrimSpace(string(b)); ns != "" {
			return ns
		}
	}
	return metav1.NamespaceDefault
}
