package main

// Counting API requests: the API server's apiserver_request_total counters
// (every client's requests) minus the requests the harness counts itself as
// it sends them. The metric has no label naming the client (its "component"
// label names the server), so the operator's share is what is left.

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"

	"k8s.io/client-go/kubernetes"
)

const requestMetric = "apiserver_request_total"

// requestKey is one series of apiserver_request_total, summed over the labels
// that do not matter here (code, group, version, scope, component).
type requestKey struct {
	Verb, Resource, Subresource string
}

func (k requestKey) String() string {
	s := k.Verb + " " + k.Resource
	if k.Subresource != "" {
		s += "/" + k.Subresource
	}
	return s
}

// requestCounts are request totals by key.
type requestCounts map[requestKey]float64

// writeVerbs are the verbs, as apiserver_request_total spells them, that
// change objects.
var writeVerbs = map[string]bool{
	"POST": true, "PUT": true, "PATCH": true, "APPLY": true, "DELETE": true, "DELETECOLLECTION": true,
}

func isWrite(verb string) bool { return writeVerbs[verb] }

// sub returns c minus o per key, dropping keys that did not grow. A counter
// that went down (a watch the harness counted before the server did) counts
// as zero.
func (c requestCounts) sub(o requestCounts) requestCounts {
	out := requestCounts{}
	for k, v := range c {
		if d := v - o[k]; d > 0 {
			out[k] = d
		}
	}
	return out
}

// only keeps the keys whose resource is in resources (all when empty).
func (c requestCounts) only(resources map[string]bool) requestCounts {
	if len(resources) == 0 {
		return c
	}
	out := requestCounts{}
	for k, v := range c {
		if resources[k.Resource] {
			out[k] = v
		}
	}
	return out
}

// totals returns the writes and all requests.
func (c requestCounts) totals() (writes, all float64) {
	for k, v := range c {
		all += v
		if isWrite(k.Verb) {
			writes += v
		}
	}
	return writes, all
}

// sortedKeys orders the keys by count, largest first, then by name.
func (c requestCounts) sortedKeys() []requestKey {
	keys := make([]requestKey, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if c[keys[i]] != c[keys[j]] {
			return c[keys[i]] > c[keys[j]]
		}
		return keys[i].String() < keys[j].String()
	})
	return keys
}

// parseRequestTotals reads the apiserver_request_total samples of a
// Prometheus text exposition.
func parseRequestTotals(r io.Reader) (requestCounts, error) {
	out := requestCounts{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		name, rest := line, ""
		if i := strings.IndexAny(line, "{ \t"); i >= 0 {
			name, rest = line[:i], line[i:]
		}
		if name != requestMetric {
			continue
		}
		labels, value, err := parseSample(rest)
		if err != nil {
			return nil, fmt.Errorf("line %d: %s: %w", n, requestMetric, err)
		}
		out[requestKey{Verb: labels["verb"], Resource: labels["resource"], Subresource: labels["subresource"]}] += value
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading metrics: %w", err)
	}
	return out, nil
}

// parseSample parses what follows a sample's name: an optional {label set},
// the value, and an optional timestamp.
func parseSample(s string) (map[string]string, float64, error) {
	labels := map[string]string{}
	s = strings.TrimLeft(s, " \t")
	if strings.HasPrefix(s, "{") {
		s = s[1:]
		for {
			s = strings.TrimLeft(s, " \t,")
			if strings.HasPrefix(s, "}") {
				s = s[1:]
				break
			}
			eq := strings.IndexByte(s, '=')
			if eq < 0 {
				return nil, 0, fmt.Errorf("label without a value in %q", s)
			}
			name := strings.TrimSpace(s[:eq])
			s = strings.TrimLeft(s[eq+1:], " \t")
			if !strings.HasPrefix(s, `"`) {
				return nil, 0, fmt.Errorf("label %s: value is not quoted", name)
			}
			value, n, err := unquoteLabel(s)
			if err != nil {
				return nil, 0, fmt.Errorf("label %s: %w", name, err)
			}
			labels[name] = value
			s = s[n:]
		}
	}
	fields := strings.Fields(s)
	if len(fields) == 0 {
		return nil, 0, fmt.Errorf("no value")
	}
	v, err := strconv.ParseFloat(fields[0], 64)
	if err != nil {
		return nil, 0, fmt.Errorf("value %q: %w", fields[0], err)
	}
	return labels, v, nil
}

// unquoteLabel reads a quoted label value at the start of s (escapes \\, \"
// and \n) and returns it with the bytes it took.
func unquoteLabel(s string) (string, int, error) {
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		switch c := s[i]; c {
		case '"':
			return b.String(), i + 1, nil
		case '\\':
			if i+1 == len(s) {
				return "", 0, fmt.Errorf("unterminated escape")
			}
			i++
			switch s[i] {
			case 'n':
				b.WriteByte('\n')
			default:
				b.WriteByte(s[i])
			}
		default:
			b.WriteByte(c)
		}
	}
	return "", 0, fmt.Errorf("unterminated quoted value")
}

// scrapeRequestTotals reads the API server's /metrics.
func scrapeRequestTotals(ctx context.Context, cs kubernetes.Interface) (requestCounts, error) {
	body, err := cs.CoreV1().RESTClient().Get().AbsPath("/metrics").Stream(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the API server's /metrics: %w", err)
	}
	defer body.Close()
	return parseRequestTotals(body)
}

// classifyRequest names a request the way apiserver_request_total does:
// verb (GET, LIST, WATCH, POST, PUT, PATCH, APPLY, DELETE, DELETECOLLECTION),
// resource and subresource. Non-resource paths (/metrics, /version,
// discovery) have an empty resource.
func classifyRequest(method string, u *url.URL, contentType string) requestKey {
	resource, name, sub := parseResourcePath(u.Path)
	verb := strings.ToUpper(method)
	switch verb {
	case http.MethodGet:
		switch {
		case isWatch(u.Query()):
			verb = "WATCH"
		case resource != "" && name == "":
			verb = "LIST"
		}
	case http.MethodPatch:
		if strings.HasPrefix(contentType, "application/apply-patch") {
			verb = "APPLY"
		}
	case http.MethodDelete:
		if resource != "" && name == "" {
			verb = "DELETECOLLECTION"
		}
	}
	return requestKey{Verb: verb, Resource: resource, Subresource: sub}
}

func isWatch(q url.Values) bool {
	v, ok := q["watch"]
	if !ok || len(v) == 0 {
		return false
	}
	s := strings.ToLower(v[0])
	return s != "0" && s != "false"
}

// parseResourcePath splits /api/v1/... and /apis/<group>/<version>/... into
// resource, name and subresource; other paths are not resource requests.
func parseResourcePath(path string) (resource, name, sub string) {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	switch {
	case len(parts) >= 3 && parts[0] == "api":
		parts = parts[2:]
	case len(parts) >= 4 && parts[0] == "apis":
		parts = parts[3:]
	default:
		return "", "", ""
	}
	// namespaces/<ns>/<resource>/..., except a namespace's own subresources.
	if len(parts) > 2 && parts[0] == "namespaces" && parts[2] != "status" && parts[2] != "finalize" {
		parts = parts[2:]
	}
	switch len(parts) {
	case 0:
		return "", "", ""
	case 1:
		return parts[0], "", ""
	case 2:
		return parts[0], parts[1], ""
	}
	return parts[0], parts[1], parts[2]
}

// requestCounter counts the harness's own requests, as the API server will.
// A watch is counted when its stream is closed, as the server counts it when
// it ends.
type requestCounter struct {
	mu     sync.Mutex
	counts requestCounts
}

func newRequestCounter() *requestCounter { return &requestCounter{counts: requestCounts{}} }

func (c *requestCounter) add(k requestKey) {
	c.mu.Lock()
	c.counts[k]++
	c.mu.Unlock()
}

// snapshot copies the counts so far.
func (c *requestCounter) snapshot() requestCounts {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(requestCounts, len(c.counts))
	for k, v := range c.counts {
		out[k] = v
	}
	return out
}

// wrap is a rest.Config WrapTransport.
func (c *requestCounter) wrap(rt http.RoundTripper) http.RoundTripper {
	return &countingTransport{next: rt, counter: c}
}

type countingTransport struct {
	next    http.RoundTripper
	counter *requestCounter
}

func (t *countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	key := classifyRequest(req.Method, req.URL, req.Header.Get("Content-Type"))
	resp, err := t.next.RoundTrip(req)
	if err != nil {
		// Never reached the server's handlers, most likely; not counted.
		return resp, err
	}
	if key.Verb == "WATCH" && resp.StatusCode == http.StatusOK {
		resp.Body = &countOnClose{ReadCloser: resp.Body, done: func() { t.counter.add(key) }}
		return resp, nil
	}
	t.counter.add(key)
	return resp, nil
}

type countOnClose struct {
	io.ReadCloser
	once sync.Once
	done func()
}

func (c *countOnClose) Close() error {
	c.once.Do(c.done)
	return c.ReadCloser.Close()
}
