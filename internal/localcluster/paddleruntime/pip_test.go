package paddleruntime

import (
	"testing"
)

// pip's own words, captured from pip 23.2 on this project's machines.
const (
	pipRefused = `Looking in indexes: http://127.0.0.1:9/simple
WARNING: Retrying (Retry(total=0, connect=None, read=None, redirect=None, status=None)) after connection broken by 'NewConnectionError('<pip._vendor.urllib3.connection.HTTPConnection object at 0x7f729011f810>: Failed to establish a new connection: [Errno 111] Connection refused')': /simple/paddlepaddle/
ERROR: Could not find a version that satisfies the requirement paddlepaddle==3.0.0 (from versions: none)
ERROR: No matching distribution found for paddlepaddle==3.0.0`
	pipNoDNS = `WARNING: Retrying (Retry(total=0, connect=None, read=None, redirect=None, status=None)) after connection broken by 'NewConnectionError('<pip._vendor.urllib3.connection.HTTPSConnection object at 0x7fcb93bd3150>: Failed to establish a new connection: [Errno -2] Name or service not known')': /simple/paddlepaddle/
ERROR: Could not find a version that satisfies the requirement paddlepaddle==3.0.0 (from versions: none)
ERROR: No matching distribution found for paddlepaddle==3.0.0`
	pipNoRetries = `Looking in indexes: http://127.0.0.1:9/simple
ERROR: Could not find a version that satisfies the requirement paddlepaddle==3.0.0 (from versions: none)
ERROR: No matching distribution found for paddlepaddle==3.0.0`
	pipNoRetriesDebug = `Fetching project page and analyzing links: http://127.0.0.1:9/simple/paddlepaddle/
Starting new HTTP connection (1): 127.0.0.1:9
Could not fetch URL http://127.0.0.1:9/simple/paddlepaddle/: connection error: HTTPConnectionPool(host='127.0.0.1', port=9): Max retries exceeded with url: /simple/paddlepaddle/ (Caused by NewConnectionError('<pip._vendor.urllib3.connection.HTTPConnection object at 0x7fd6550caa90>: Failed to establish a new connection: [Errno 111] Connection refused')) - skipping
ERROR: Could not find a version that satisfies the requirement paddlepaddle==3.0.0 (from versions: none)
ERROR: No matching distribution found for paddlepaddle==3.0.0`
	pipDownloadTimeout = `Collecting paddlepaddle==3.0.0
  Downloading paddlepaddle-3.0.0-cp311-cp311-manylinux1_x86_64.whl (192.8 MB)
ERROR: Exception:
pip._vendor.urllib3.exceptions.ReadTimeoutError: HTTPSConnectionPool(host='files.pythonhosted.org', port=443): Read timed out.`
	pipOldPython = `ERROR: Ignored the following versions that require a different python version: 2.3.0 Requires-Python >=3.11; 2.4.6 Requires-Python >=3.11
ERROR: Could not find a version that satisfies the requirement numpy==2.4.6 (from versions: 1.26.4, 2.2.6)
ERROR: No matching distribution found for numpy==2.4.6`
	pipNoWheel = `Collecting paddlepaddle==3.0.0
ERROR: Could not find a version that satisfies the requirement paddlepaddle==3.0.0 (from versions: 3.1.0, 3.1.1, 3.2.0)
ERROR: No matching distribution found for paddlepaddle==3.0.0`
	pipDiskFull = `Installing collected packages: paddlepaddle
ERROR: Could not install packages due to an OSError: [Errno 28] No space left on device`
	pipBadWheel = `Processing ./broken.whl
ERROR: Wheel 'broken' located at /tmp/broken.whl is invalid.`
)

func TestClassifyPip(t *testing.T) {
	tests := []struct {
		name, out string
		want      pipFailure
		wantWhat  string
	}{
		{"connection refused", pipRefused, pipNetwork, ""},
		{"no DNS", pipNoDNS, pipNetwork, ""},
		{"download timed out", pipDownloadTimeout, pipNetwork, ""},
		{"requires a newer Python", pipOldPython, pipNoDistribution, "numpy==2.4.6"},
		{"requires a newer Python after a retried connection", "WARNING: Retrying (Retry(total=4)) after connection broken by 'ReadTimeoutError'\n" + pipOldPython, pipNoDistribution, "numpy==2.4.6"},
		{"no wheel for this Python", pipNoWheel, pipNoDistribution, "paddlepaddle==3.0.0"},
		{"disk full", pipDiskFull, pipNoSpace, ""},
		{"anything else", pipBadWheel, pipOther, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, what := classifyPip(tt.out)
			if got != tt.want || what != tt.wantWhat {
				t.Errorf("classifyPip = %v, %q; want %v, %q", got, what, tt.want, tt.wantWhat)
			}
		})
	}
}
