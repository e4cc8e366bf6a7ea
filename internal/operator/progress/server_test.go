package progress

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	clientfake "sigs.k8s.io/controller-runtime/pkg/client/fake"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
)

// fakeAuthn plays the API server's TokenReview: tokens map to the pods they
// are bound to, for the audiences given.
type fakeAuthn struct {
	mu      sync.Mutex
	tokens  map[string]authnv1.TokenReviewStatus
	reviews int
}

func (f *fakeAuthn) clientset() *fake.Clientset {
	cs := fake.NewClientset()
	cs.PrependReactor("create", "tokenreviews", func(a clienttesting.Action) (bool, runtime.Object, error) {
		tr := a.(clienttesting.CreateAction).GetObject().(*authnv1.TokenReview).DeepCopy()
		f.mu.Lock()
		defer f.mu.Unlock()
		f.reviews++
		st, ok := f.tokens[tr.Spec.Token]
		if !ok {
			tr.Status = authnv1.TokenReviewStatus{Authenticated: false, Error: "invalid bearer token"}
			return true, tr, nil
		}
		// The API server authenticates a token only for an audience it has.
		for _, want := range tr.Spec.Audiences {
			for _, has := range st.Audiences {
				if want == has {
					tr.Status = st
					tr.Status.Audiences = []string{want}
					return true, tr, nil
				}
			}
		}
		tr.Status = authnv1.TokenReviewStatus{Authenticated: false, Error: "token audiences is invalid for the target audiences"}
		return true, tr, nil
	})
	return cs
}

// podToken is a token bound to a pod, for audiences.
func podToken(pod *corev1.Pod, audiences ...string) authnv1.TokenReviewStatus {
	return authnv1.TokenReviewStatus{
		Authenticated: true,
		Audiences:     audiences,
		User: authnv1.UserInfo{
			Username: "system:serviceaccount:" + pod.Namespace + ":default",
			Extra: map[string]authnv1.ExtraValue{
				extraPodName: {pod.Name},
				extraPodUID:  {string(pod.UID)},
			},
		},
	}
}

func testJob(name string, uid types.UID) *paddlev1.PaddleJob {
	return &paddlev1.PaddleJob{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: uid}}
}

func testPod(job *paddlev1.PaddleJob, rt paddlev1.ReplicaType, i int) *corev1.Pod {
	name := paddlev1.PodName(job.Name, rt, i)
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		Namespace: job.Namespace, Name: name, UID: types.UID(name + "-uid"),
		Labels: map[string]string{
			paddlev1.LabelJobName: job.Name, paddlev1.LabelReplicaType: string(rt),
			paddlev1.LabelReplicaIndex: string(rune('0' + i)),
		},
		OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(job, paddlev1.GroupVersion.WithKind("PaddleJob"))},
	}}
}

type fixture struct {
	t      *testing.T
	authn  *fakeAuthn
	store  *Store
	server *Server
	clock  *time.Time
	jobA   *paddlev1.PaddleJob
	podA0  *corev1.Pod
	podA1  *corev1.Pod
	podB0  *corev1.Pod
}

func newFixture(t *testing.T, objs ...*paddlev1.PaddleJob) *fixture {
	t.Helper()
	jobA, jobB := testJob("a", "uid-a"), testJob("b", "uid-b")
	f := &fixture{t: t, jobA: jobA}
	f.podA0, f.podA1 = testPod(jobA, paddlev1.ReplicaWorker, 0), testPod(jobA, paddlev1.ReplicaWorker, 1)
	f.podB0 = testPod(jobB, paddlev1.ReplicaWorker, 0)
	jobs := []*paddlev1.PaddleJob{jobA, jobB}
	if len(objs) > 0 {
		jobs = objs
	}
	scheme := runtime.NewScheme()
	_ = corev1.AddToScheme(scheme)
	_ = paddlev1.AddToScheme(scheme)
	b := clientfake.NewClientBuilder().WithScheme(scheme).WithObjects(f.podA0, f.podA1, f.podB0)
	for _, j := range jobs {
		b = b.WithObjects(j)
	}
	f.authn = &fakeAuthn{tokens: map[string]authnv1.TokenReviewStatus{
		"token-a0":     podToken(f.podA0, Audience),
		"token-a1":     podToken(f.podA1, Audience),
		"token-b0":     podToken(f.podB0, Audience),
		"token-api-a0": podToken(f.podA0, "https://kubernetes.default.svc"),
		"token-secret": {Authenticated: true, Audiences: []string{Audience}, User: authnv1.UserInfo{Username: "system:serviceaccount:ns:default"}},
	}}
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	f.clock = &now
	f.store = NewStore(Options{StatusInterval: 15 * time.Second, ReportRate: 1, ReportBurst: 3})
	f.store.now = func() time.Time { return *f.clock }
	f.server = &Server{Store: f.store, Reviews: f.authn.clientset().AuthenticationV1().TokenReviews(), Reader: b.Build()}
	return f
}

// post sends a report for job with token and returns the status and the
// error message.
func (f *fixture) post(job, token, body string) (int, string) {
	f.t.Helper()
	req := httptest.NewRequest(http.MethodPost, ReportPath("ns", job), strings.NewReader(body))
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	rec := httptest.NewRecorder()
	f.server.ServeHTTP(rec, req)
	var out struct {
		Error string `json:"error"`
	}
	_ = json.Unmarshal(rec.Body.Bytes(), &out)
	if strings.Contains(rec.Body.String(), token) && token != "" {
		f.t.Errorf("the response repeats the token: %s", rec.Body.String())
	}
	return rec.Code, out.Error
}

func (f *fixture) take(final bool) (*paddlev1.JobProgress, time.Duration) {
	return f.store.Take(types.NamespacedName{Namespace: "ns", Name: f.jobA.Name}, f.jobA.UID, nil, final)
}

func TestReportIsStoredAndTriggersTheJob(t *testing.T) {
	f := newFixture(t)
	code, msg := f.post("a", "token-a0", `{"percent": 42.7, "epoch": 2, "totalEpochs": 5, "step": 300, "metrics": {"loss": 0.4821, "auc": 0.731234567}}`)
	if code != http.StatusAccepted {
		t.Fatalf("status %d (%s), want 202", code, msg)
	}
	select {
	case ev := <-f.store.Events():
		if ev.Object.GetNamespace() != "ns" || ev.Object.GetName() != "a" {
			t.Fatalf("event for %s/%s, want ns/a", ev.Object.GetNamespace(), ev.Object.GetName())
		}
	default:
		t.Fatal("no reconcile was asked for")
	}
	p, wait := f.take(false)
	if p == nil || wait != 0 {
		t.Fatalf("Take = %v, %v; want the report at once", p, wait)
	}
	if *p.Percent != 42 || *p.Epoch != 2 || *p.TotalEpochs != 5 || *p.Step != 300 || p.Reporter != "a-worker-0" {
		t.Errorf("progress %+v", p)
	}
	want := []paddlev1.ProgressMetric{{Name: "loss", Value: "0.4821"}, {Name: "auc", Value: "0.731235"}}
	if len(p.Metrics) != 2 || p.Metrics[0] != want[0] || p.Metrics[1] != want[1] {
		t.Errorf("metrics %v, want %v (in the reported order)", p.Metrics, want)
	}
}

func TestUnauthenticatedReportsAreRefused(t *testing.T) {
	f := newFixture(t)
	for _, tc := range []struct{ name, token, want string }{
		{"no token", "", "no bearer token"},
		{"unknown token", "forged", "not valid"},
		{"token for the API server's audience", "token-api-a0", "not valid"},
		{"token not bound to a pod", "token-secret", "not bound to a pod"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, msg := f.post("a", tc.token, `{"percent": 10}`)
			if code != http.StatusUnauthorized || !strings.Contains(msg, tc.want) {
				t.Errorf("got %d %q, want 401 saying %q", code, msg, tc.want)
			}
		})
	}
	if p, _ := f.take(true); p != nil {
		t.Errorf("a refused report reached the store: %+v", p)
	}
}

func TestTokenOfAnotherJobsPodIsRefused(t *testing.T) {
	f := newFixture(t)
	code, msg := f.post("a", "token-b0", `{"percent": 99}`)
	if code != http.StatusForbidden || !strings.Contains(msg, "does not belong to PaddleJob a") {
		t.Fatalf("got %d %q, want 403 naming the job", code, msg)
	}
	if p, _ := f.take(true); p != nil {
		t.Errorf("the other job's report reached job a: %+v", p)
	}
	// The same pod reports for its own job.
	if code, msg := f.post("b", "token-b0", `{"percent": 99}`); code != http.StatusAccepted {
		t.Errorf("own job: %d %s", code, msg)
	}
}

func TestDeletedPodsTokenIsRefused(t *testing.T) {
	f := newFixture(t)
	// A pod of the same name, recreated: the old token's UID is not its.
	f.authn.tokens["token-old"] = podToken(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a-worker-0", UID: "gone"}}, Audience)
	if code, msg := f.post("a", "token-old", `{"percent": 1}`); code != http.StatusForbidden || !strings.Contains(msg, "earlier pod") {
		t.Errorf("got %d %q, want 403", code, msg)
	}
}

func TestFinishedJobRefusesReports(t *testing.T) {
	done := testJob("a", "uid-a")
	done.Status.Phase = paddlev1.PaddleJobCompleted
	f := newFixture(t, done, testJob("b", "uid-b"))
	if code, msg := f.post("a", "token-a0", `{"percent": 100}`); code != http.StatusConflict || !strings.Contains(msg, "has finished") {
		t.Errorf("got %d %q, want 409", code, msg)
	}
}

func TestOversizeReportIsRefused(t *testing.T) {
	f := newFixture(t)
	big := `{"percent": 10, "metrics": {"loss": 0.1` + strings.Repeat(" ", MaxReportBytes) + `}}`
	if code, msg := f.post("a", "token-a0", big); code != http.StatusRequestEntityTooLarge {
		t.Errorf("got %d %q, want 413", code, msg)
	}
	if p, _ := f.take(true); p != nil {
		t.Errorf("an oversize report reached the store: %+v", p)
	}
}

func TestInvalidReportsNameTheField(t *testing.T) {
	f := newFixture(t)
	many := map[string]float64{}
	for i := 0; i <= paddlev1.MaxProgressMetrics; i++ {
		many["m"+string(rune('a'+i))] = 1
	}
	tooMany, _ := json.Marshal(map[string]any{"metrics": many})
	for _, tc := range []struct{ body, want string }{
		{`{"percent": 101}`, "percent: 101 is not within 0-100"},
		{`{"percent": -1}`, "percent"},
		{`{"epoch": -3}`, "epoch: -3"},
		{`{"metrics": {"bad name": 1}}`, `name "bad name"`},
		{`{"metrics": {"loss": "low"}}`, "metrics.loss: want a number"},
		{`{"progress": 3}`, `unknown field "progress"`},
		{`{}`, "the report is empty"},
		{string(tooMany), "17 metrics, at most 16"},
		{`not json`, "decoding the report"},
	} {
		f.clock = ptrTime(f.clock.Add(10 * time.Second)) // stay within the rate
		code, msg := f.post("a", "token-a0", tc.body)
		if code != http.StatusBadRequest || !strings.Contains(msg, tc.want) {
			t.Errorf("%s: got %d %q, want 400 saying %q", tc.body, code, msg, tc.want)
		}
	}
}

func ptrTime(t time.Time) *time.Time { return &t }

func TestChattyReporterIsLimitedAndCoalesced(t *testing.T) {
	f := newFixture(t)
	// The burst (3) is accepted, the next report in the same second refused.
	for i := range 3 {
		if code, msg := f.post("a", "token-a0", `{"percent": `+string(rune('1'+i))+`}`); code != http.StatusAccepted {
			t.Fatalf("report %d: %d %s", i, code, msg)
		}
	}
	if code, msg := f.post("a", "token-a0", `{"percent": 9}`); code != http.StatusTooManyRequests || !strings.Contains(msg, "a-worker-0") {
		t.Fatalf("got %d %q, want 429 naming the pod", code, msg)
	}
	// Other pods have their own limit.
	if code, _ := f.post("a", "token-a1", `{"percent": 1}`); code != http.StatusAccepted {
		t.Fatalf("another pod was limited: %d", code)
	}
	// One token review per token: the rest came from the cache.
	if f.authn.reviews != 2 {
		t.Errorf("%d token reviews, want 2: one per distinct token", f.authn.reviews)
	}

	// Reports at 1/s for a minute: at most 60s/15s = 4 copies (plus the
	// first) reach the status, each the latest.
	copies := 0
	var last *paddlev1.JobProgress
	for i := range 60 {
		f.clock = ptrTime(f.clock.Add(time.Second))
		body := `{"percent": ` + strings.TrimSpace(strings.Repeat(" ", 0)) + itoa(10+i) + `, "metrics": {"loss": 0.5}}`
		if code, msg := f.post("a", "token-a0", body); code != http.StatusAccepted {
			t.Fatalf("report %d: %d %s", i, code, msg)
		}
		p, wait := f.store.Take(types.NamespacedName{Namespace: "ns", Name: "a"}, "uid-a", last, false)
		if p != nil {
			copies++
			last = p
			if *p.Percent != int32(10+i) {
				t.Errorf("copied %d%%, want the latest %d%%", *p.Percent, 10+i)
			}
		} else if wait <= 0 || wait > 15*time.Second {
			t.Errorf("not copied, wait %v: want a requeue within the interval", wait)
		}
	}
	if copies < 4 || copies > 5 {
		t.Errorf("%d status copies in a minute of reports at 1/s, want 4-5", copies)
	}
	// A final report is copied at once.
	f.clock = ptrTime(f.clock.Add(time.Second))
	f.post("a", "token-a0", `{"percent": 100}`)
	if p, _ := f.store.Take(types.NamespacedName{Namespace: "ns", Name: "a"}, "uid-a", last, false); p == nil || *p.Percent != 100 {
		t.Errorf("the final report waited: %+v", p)
	}
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }

func TestStatusFollowsTheFirstWorker(t *testing.T) {
	f := newFixture(t)
	f.post("a", "token-a1", `{"percent": 80, "metrics": {"loss": 0.2}}`)
	if p, _ := f.take(true); p == nil || p.Reporter != "a-worker-1" {
		t.Fatalf("got %+v, want worker 1's report while it is the only one", p)
	}
	f.post("a", "token-a0", `{"percent": 30, "metrics": {"auc": 0.7}}`)
	f.post("a", "token-a1", `{"percent": 90}`)
	p, _ := f.take(true)
	if p == nil || p.Reporter != "a-worker-0" || *p.Percent != 30 || len(p.Metrics) != 1 || p.Metrics[0].Name != "auc" {
		t.Fatalf("got %+v, want worker 0's report only", p)
	}
}

// The progress deadline counts a report of any pod, not only the one the
// status follows.
func TestLastReportIsAnyPods(t *testing.T) {
	f := newFixture(t)
	key := types.NamespacedName{Namespace: "ns", Name: "a"}
	if pod, at := f.store.LastReport(key, "uid-a"); pod != "" || !at.IsZero() {
		t.Fatalf("a job with no report: %q at %v", pod, at)
	}
	f.post("a", "token-a0", `{"step": 1}`)
	f.clock = ptrTime(f.clock.Add(7 * time.Second))
	f.post("a", "token-a1", `{"step": 2}`)
	if pod, at := f.store.LastReport(key, "uid-a"); pod != "a-worker-1" || !at.Equal(*f.clock) {
		t.Errorf("last report %q at %v, want a-worker-1 at %v", pod, at, *f.clock)
	}
	if pod, _ := f.store.LastReport(key, "uid-of-a-new-job"); pod != "" {
		t.Errorf("a new job of the same name has the old one's report from %q", pod)
	}
}

func TestMetricsMergeAndETA(t *testing.T) {
	f := newFixture(t)
	f.post("a", "token-a0", `{"percent": 10, "metrics": {"auc": 0.6, "loss": 0.7}}`)
	f.clock = ptrTime(f.clock.Add(20 * time.Second))
	f.post("a", "token-a0", `{"percent": 30, "metrics": {"loss": 0.5}}`)
	p, _ := f.take(true)
	// 20 points in 20 s: 70 to go in 70 s.
	if p.EstimatedSecondsRemaining == nil || *p.EstimatedSecondsRemaining != 70 {
		t.Errorf("ETA %v, want 70", p.EstimatedSecondsRemaining)
	}
	if len(p.Metrics) != 2 || p.Metrics[0] != (paddlev1.ProgressMetric{Name: "auc", Value: "0.6"}) || p.Metrics[1].Value != "0.5" {
		t.Errorf("metrics %v, want auc kept from the earlier report and loss updated, in first-reported order", p.Metrics)
	}
	// The program's own estimate wins.
	f.clock = ptrTime(f.clock.Add(2 * time.Second))
	f.post("a", "token-a0", `{"percent": 31, "etaSeconds": 5}`)
	if p, _ := f.take(true); *p.EstimatedSecondsRemaining != 5 {
		t.Errorf("ETA %d, want the reported 5", *p.EstimatedSecondsRemaining)
	}
}

func TestHistoryIsBounded(t *testing.T) {
	s := NewStore(Options{HistoryPoints: 8, ReportRate: 1000, ReportBurst: 1000})
	now := time.Unix(1000, 0)
	s.now = func() time.Time { return now }
	job := types.NamespacedName{Namespace: "ns", Name: "a"}
	for i := range 100 {
		now = now.Add(time.Second)
		var ms Metrics
		for m := range 20 {
			ms = append(ms, Metric{Name: "m" + itoa(m), Value: float64(i)})
		}
		if r := s.put(job, "uid", "a-worker-0", 0, Report{Metrics: ms[:16]}); r != accepted {
			t.Fatal(r)
		}
		s.put(job, "uid", "a-worker-0", 0, Report{Metrics: ms[16:]})
	}
	due := s.historyDue(now)[job]
	if len(due.order) != paddlev1.MaxProgressMetrics {
		t.Errorf("%d series, want at most %d", len(due.order), paddlev1.MaxProgressMetrics)
	}
	pts := due.series["m0"]
	if len(pts) > 8 || pts[0].Value != 0 || pts[len(pts)-1].Value != 99 {
		t.Errorf("curve %v: want at most 8 points from the first to the latest", pts)
	}
	if again := s.historyDue(now.Add(time.Second)); len(again) != 0 {
		t.Errorf("written again within the flush interval: %v", again)
	}
}
