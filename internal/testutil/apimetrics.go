package testutil

import (
	"context"
	"fmt"
	"strings"

	"k8s.io/client-go/rest"
)

// PaddleJobStatusWrites is the number of writes (PUT or PATCH) to any
// PaddleJob's status the API server has served, read from its own request
// counters (apiserver_request_total), so a test can bound what the operator
// wrote without trusting the operator.
func PaddleJobStatusWrites(ctx context.Context, c rest.Interface) (int, error) {
	raw, err := c.Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return 0, fmt.Errorf("reading the API server's metrics: %w", err)
	}
	total := 0
	for _, line := range strings.Split(string(raw), "\n") {
		if !strings.HasPrefix(line, "apiserver_request_total{") || !strings.Contains(line, `resource="paddlejobs"`) ||
			!strings.Contains(line, `subresource="status"`) || !(strings.Contains(line, `verb="PUT"`) || strings.Contains(line, `verb="PATCH"`)) {
			continue
		}
		var n float64
		if _, err := fmt.Sscan(line[strings.LastIndex(line, " ")+1:], &n); err != nil {
			return 0, fmt.Errorf("parsing %q: %w", line, err)
		}
		total += int(n)
	}
	return total, nil
}
