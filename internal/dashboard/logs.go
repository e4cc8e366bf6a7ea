package dashboard

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/pkg/client"
)

// serveLog streams a pod's log as plain text: GET .../pods/{pod}/log with
// container (default: the first), follow, previous and tailLines. The pod
// must be one of the job's. Followed, the response waits for the container
// to start and ends when it does.
func (s *Server) serveLog(w http.ResponseWriter, r *http.Request) {
	ns, name, ok := jobPath(w, r)
	if !ok {
		return
	}
	podName := r.PathValue("pod")
	if err := validName("pod", podName); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	q := r.URL.Query()
	follow, previous := q.Get("follow") == "true", q.Get("previous") == "true"
	var tail int64
	if t := q.Get("tailLines"); t != "" {
		n, err := strconv.ParseInt(t, 10, 64)
		if err != nil || n < 0 {
			http.Error(w, fmt.Sprintf("tailLines %q: want a whole number of lines, 0 or more", t), http.StatusBadRequest)
			return
		}
		tail = n
	}
	ctx, cancel := s.streamContext(r)
	defer cancel()
	pod, err := s.client.Clientset().CoreV1().Pods(ns).Get(ctx, podName, metav1.GetOptions{})
	if err != nil {
		httpError(w, err)
		return
	}
	if pod.Labels[paddlev1.LabelJobName] != name {
		http.Error(w, fmt.Sprintf("pod %s/%s is not a pod of PaddleJob %s", ns, podName, name), http.StatusNotFound)
		return
	}
	var containers []string
	for _, c := range append(slices.Clone(pod.Spec.InitContainers), pod.Spec.Containers...) {
		containers = append(containers, c.Name)
	}
	container := q.Get("container")
	if container == "" && len(pod.Spec.Containers) > 0 {
		container = pod.Spec.Containers[0].Name
	}
	if !slices.Contains(containers, container) {
		http.Error(w, fmt.Sprintf("container %q: pod %s has %s", container, podName, strings.Join(containers, ", ")), http.StatusBadRequest)
		return
	}

	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	out := &flushWriter{w: w, rc: http.NewResponseController(w)}
	if follow && !previous {
		err = s.client.StreamLogs(ctx, ns, []client.PodLog{{Pod: podName, Container: container}}, out,
			client.StreamOptions{Follow: true, TailLines: tail})
	} else {
		var rc io.ReadCloser
		rc, err = s.client.Logs(ctx, ns, podName, client.LogOptions{Container: container, Previous: previous, TailLines: tail})
		if err == nil {
			_, err = io.Copy(out, rc)
			rc.Close()
		}
	}
	if err != nil && ctx.Err() == nil {
		if !out.started() {
			httpError(w, err)
			return
		}
		fmt.Fprintf(out, "\n[paddlejob dashboard: the log stopped: %v]\n", err)
	}
}

// flushWriter sends each write to the browser at once.
type flushWriter struct {
	w  http.ResponseWriter
	rc *http.ResponseController

	mu    sync.Mutex
	wrote bool
}

func (f *flushWriter) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.wrote = true
	n, err := f.w.Write(p)
	if err == nil {
		err = f.rc.Flush()
	}
	return n, err
}

func (f *flushWriter) started() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.wrote
}

// serveYAML writes the job as kubectl get -o yaml shows it, without the
// managed fields.
func (s *Server) serveYAML(w http.ResponseWriter, r *http.Request) {
	ns, name, ok := jobPath(w, r)
	if !ok {
		return
	}
	job, err := s.client.Get(r.Context(), ns, name)
	if err != nil {
		httpError(w, err)
		return
	}
	job.ManagedFields = nil
	job.APIVersion, job.Kind = paddlev1.GroupVersion.String(), "PaddleJob"
	data, err := yaml.Marshal(job)
	if err != nil {
		httpError(w, err)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write(data)
}

// httpError answers with the API server's status for its errors (403 for
// what the user may not read, 404 for what is not there), else 502.
func httpError(w http.ResponseWriter, err error) {
	code := http.StatusBadGateway
	var status apierrors.APIStatus
	if errors.As(err, &status) && status.Status().Code >= 400 {
		code = int(status.Status().Code)
	}
	http.Error(w, err.Error(), code)
}

func notFound(err error) bool { return apierrors.IsNotFound(err) }
