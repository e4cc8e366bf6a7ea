package launcher

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// rbacHint points at the manifest that grants what the launcher needs.
const rbacHint = "run the pod with the paddle-launcher service account of config/launcher/rbac.yaml"

// expectedPods is how many pods the job runs: override (--parallelism or
// PADDLE_PARALLELISM) when set, else the Job's .spec.parallelism; when RBAC
// does not let the pod read its Job, fallback (CONF_PADDLE_GRADIENT_NUM, one
// trainer per pod) when that is set.
func expectedPods(ctx context.Context, c Cluster, namespace, job string, override, fallback int, log io.Writer) (int, error) {
	if override > 0 {
		return override, nil
	}
	n, err := c.JobParallelism(ctx, namespace, job)
	switch {
	case err == nil:
		return n, nil
	case apierrors.IsForbidden(err) && fallback > 0:
		fmt.Fprintf(log, "paddlejob launch: cannot read job %s/%s (forbidden), expecting CONF_PADDLE_GRADIENT_NUM=%d pods\n", namespace, job, fallback)
		return fallback, nil
	case apierrors.IsNotFound(err):
		return 0, fmt.Errorf("%w: JOB_NAME must be the name of the Job running this pod, or give --parallelism", err)
	default:
		return 0, fmt.Errorf("%w (give --parallelism or PADDLE_PARALLELISM to skip reading the Job)", err)
	}
}

// waitForPeers polls the job's pods until exactly expected of them are
// Running with a pod IP, and returns those. Transient API errors are retried
// until the timeout; a permission error ends the wait at once.
func waitForPeers(ctx context.Context, c Cluster, namespace, job string, expected int, interval, timeout time.Duration, progress io.Writer) ([]corev1.Pod, error) {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	var (
		last    = peerState{expected: expected}
		lastMsg string
		lastErr error
	)
	for {
		pods, err := c.JobPods(ctx, namespace, job)
		switch {
		case apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err):
			return nil, fmt.Errorf("%w; %s", err, rbacHint)
		case err != nil && ctx.Err() == nil:
			lastErr = err
		case err == nil:
			lastErr = nil
			last = observePeers(pods, expected)
			if last.complete() {
				return last.ready, nil
			}
			if msg := last.String(); msg != lastMsg {
				fmt.Fprintf(progress, "paddlejob launch: %s\n", msg)
				lastMsg = msg
			}
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("waiting for the pods of job %s/%s: %w", namespace, job, ctx.Err())
		case <-deadline.C:
			msg := fmt.Sprintf("timed out after %s waiting for the pods of job %s/%s: %s", timeout, namespace, job, last)
			if lastErr != nil {
				return nil, fmt.Errorf("%s (last error: %w)", msg, lastErr)
			}
			return nil, errors.New(msg)
		case <-time.After(interval):
		}
	}
}
