package integration

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/internal/operator"
	"github.com/paddlejob/paddlejob/internal/operator/progress"
	"github.com/paddlejob/paddlejob/internal/testutil"
)

// A job named "prometheus" beside an existing ConfigMap "prometheus-metrics"
// (issue 21): the operator's history writer leaves that ConfigMap exactly as
// it was — no owner reference, which would have the garbage collector delete
// it with the job — through the job's reports and its deletion, and tells
// the job so in a Warning event naming it. A job of another name, reporting
// alike, gets its history written: the writer did run.
func TestProgressHistoryNeverTakesOverAForeignConfigMap(t *testing.T) {
	ns := newNamespace(t)
	foreign := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: progress.HistoryConfigMapName("prometheus"), Labels: map[string]string{"app": "prometheus"}},
		Data:       map[string]string{"prometheus.yml": "scrape_configs:\n- job_name: paddlejob\n"},
	}
	if err := k8s.Create(ctx(t), foreign); err != nil {
		t.Fatal(err)
	}
	original := configMapBytes(t, ns, foreign.Name)
	// The reporting pods' tokens are for the namespace's default account.
	if err := k8s.Create(ctx(t), &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "default"}}); err != nil {
		t.Fatal(err)
	}

	addr := freeLoopbackAddr(t)
	startOperator(t, func(o *operator.Options) {
		o.Progress.Addr, o.Progress.URL = addr, "http://"+addr
	})
	for _, name := range []string{"prometheus", "wd"} {
		job := testutil.MakePaddleJob(name, ns).Workers(1).Obj()
		job.Spec.Worker.Template.Spec.ServiceAccountName = "default"
		createJob(t, job)
		pod := waitForPods(t, ns, name, name+"-worker-0")[name+"-worker-0"]
		report(t, addr, ns, name, pod)
	}

	// The writer writes wd's history and tells prometheus why it writes none.
	eventually(t, "wd's metric history", func() (bool, error) {
		cm := &corev1.ConfigMap{}
		if err := k8s.Get(ctx(t), types.NamespacedName{Namespace: ns, Name: progress.HistoryConfigMapName("wd")}, cm); err != nil {
			return false, err
		}
		h, err := progress.DecodeHistory(cm)
		return err == nil && len(h.Metrics) == 1 && h.Metrics[0].Name == "loss", fmt.Errorf("history %+v, %v", h, err)
	})
	eventually(t, "a Warning event on prometheus naming the ConfigMap", func() (bool, error) {
		events, err := clientset.EventsV1().Events(ns).List(ctx(t), metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for _, e := range events.Items {
			if e.Regarding.Kind == "PaddleJob" && e.Regarding.Name == "prometheus" && e.Type == corev1.EventTypeWarning &&
				e.Reason == progress.ReasonHistoryNotWritten && strings.Contains(e.Note, ns+"/prometheus-metrics") {
				return true, nil
			}
		}
		return false, fmt.Errorf("%d events, none about the history", len(events.Items))
	})
	if got := configMapBytes(t, ns, foreign.Name); got != original {
		t.Errorf("the ConfigMap changed while the job reported:\n%s\nwant\n%s", got, original)
	}

	// The job goes; the ConfigMap stays as it was.
	if err := k8s.Delete(ctx(t), getJob(t, ns, "prometheus")); err != nil {
		t.Fatal(err)
	}
	eventually(t, "prometheus to be deleted", func() (bool, error) {
		err := k8s.Get(ctx(t), types.NamespacedName{Namespace: ns, Name: "prometheus"}, &paddlev1.PaddleJob{})
		return isNotFound(err), err
	})
	if got := configMapBytes(t, ns, foreign.Name); got != original {
		t.Errorf("the ConfigMap changed with the job's deletion:\n%s\nwant\n%s", got, original)
	}
}

// configMapBytes is a ConfigMap as the API server serves it, every field
// (resourceVersion, owners, managed fields) included.
func configMapBytes(t *testing.T, ns, name string) string {
	t.Helper()
	raw, err := clientset.CoreV1().RESTClient().Get().Namespace(ns).Resource("configmaps").Name(name).DoRaw(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}

// freeLoopbackAddr is a loopback address no one listens on now.
func freeLoopbackAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	return addr
}

// report posts one progress report as the pod's training program would,
// with a token bound to the pod for the endpoint's audience.
func report(t *testing.T, addr, ns, job string, pod corev1.Pod) {
	t.Helper()
	tr, err := clientset.CoreV1().ServiceAccounts(ns).CreateToken(ctx(t), "default", &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		Audiences:         []string{progress.Audience},
		ExpirationSeconds: ptr.To[int64](600),
		BoundObjectRef:    &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID},
	}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	body, _ := json.Marshal(map[string]any{"percent": 10, "metrics": map[string]float64{"loss": 0.7}})
	url := "http://" + addr + progress.ReportPath(ns, job)
	var resp *http.Response
	// The endpoint starts with the operator: wait until it answers, then
	// report once.
	eventually(t, "the progress endpoint to listen", func() (bool, error) {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
		}
		return err == nil, err
	})
	req, _ := http.NewRequestWithContext(ctx(t), http.MethodPost, url, bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+tr.Status.Token)
	req.Header.Set("Content-Type", "application/json")
	if resp, err = http.DefaultClient.Do(req); err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var answer bytes.Buffer
	_, _ = answer.ReadFrom(resp.Body)
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("report for %s: %d %s", job, resp.StatusCode, answer.String())
	}
}
