package paddleruntime

import (
	"reflect"
	"regexp"
	"strings"
	"testing"
)

// The pinned releases: 2.6.2 (the newest 2.x), 3.0.0 (the default, the
// newest with the parameter-server runtime) and 3.3.1 (the newest, without
// it), each pinned with hashes.
func TestPinnedReleases(t *testing.T) {
	want := []Release{
		{Version: "2.6.2", ParameterServer: true},
		{Version: "3.0.0", ParameterServer: true, Default: true},
		{Version: "3.3.1"},
	}
	if got := Releases(); !reflect.DeepEqual(got, want) {
		t.Errorf("Releases() = %+v; want %+v", got, want)
	}
	if PinnedPaddleVersion() != DefaultRelease || pins.paddle != DefaultRelease {
		t.Errorf("PinnedPaddleVersion() = %q, default pins %q; want %s", PinnedPaddleVersion(), pins.paddle, DefaultRelease)
	}
	if got := ParameterServerReleases(); !reflect.DeepEqual(got, []string{"2.6.2", "3.0.0"}) {
		t.Errorf("ParameterServerReleases() = %v", got)
	}
	for _, tt := range []struct {
		version, python string
		// what each must pin beyond Paddle's own requirements
		alsoPins []string
	}{
		// protobuf 4.21+ is what Paddle 3.0.0 needs; etcd3 its elastic launcher.
		{"3.0.0", "CPython 3.11-3.13", []string{"protobuf==4.25.5", "etcd3==0.12.0"}},
		{"2.6.2", "CPython 3.11-3.12", []string{"protobuf==4.25.5"}}, // no cp313 wheel of 2.6.2
		{"3.3.1", "CPython 3.11-3.13", []string{"protobuf==4.25.5", "safetensors==0.8.0", "setuptools==80.9.0"}},
	} {
		p, err := pinsOf(tt.version)
		if err != nil {
			t.Fatal(err)
		}
		if got := p.pythonRange(); got != tt.python {
			t.Errorf("%s: python range = %q, want %q", tt.version, got, tt.python)
		}
		if !p.hashed {
			t.Errorf("%s: not every pin has hashes", tt.version)
		}
		for _, pin := range tt.alsoPins {
			if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(pin) + ` \\$`).Match(p.raw) {
				t.Errorf("%s does not pin %s", tt.version, pin)
			}
		}
	}
	if _, err := pinsOf("3.1.1"); err == nil || !strings.Contains(err.Error(), "the pinned releases are 2.6.2, 3.0.0, 3.3.1") {
		t.Errorf("pinsOf(3.1.1) = %v; want an error naming the pinned releases", err)
	}
}

func TestParsePins(t *testing.T) {
	const header = "# python: 3.11-3.13\n# parameter-server: yes\n"
	const h1 = " \\\n    --hash=sha256:" + "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	const h2 = " \\\n    --hash=sha256:" + "fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210"
	tests := []struct {
		name, raw, wantErr string
		wantPS             bool
	}{
		{"exact pins with hashes", header + "paddlepaddle==3.0.0" + h1 + h2 + "\nnumpy==2.4.6" + h1 + "\n", "", true},
		{"comments and blanks", "# why\n\n" + header + "PaddlePaddle==3.0.0" + h1 + "\n", "", true},
		{"no parameter server", "# python: 3.11-3.13\n# parameter-server: no\npaddlepaddle==3.0.0" + h1 + "\n", "", false},
		{"a floating pin", header + "paddlepaddle==3.0.0" + h1 + "\nnumpy>=2" + h1 + "\n", `"numpy>=2 --hash=sha256:0123`, false},
		{"a pin without hashes", header + "paddlepaddle==3.0.0" + h1 + "\nnumpy==2.4.6\n", "1 of 2 pins carry --hash options", false},
		{"no hashes at all", header + "paddlepaddle==3.0.0\n", "every pin needs its --hash", false},
		{"a short hash", header + "paddlepaddle==3.0.0 \\\n    --hash=sha256:0123\n", "is not an exact pin", false},
		{"a comment inside a pin", header + "paddlepaddle==3.0.0 \\\n# no\n    --hash=sha256:0123\n", "a comment inside the pin", false},
		{"no paddle", header + "numpy==2.4.6" + h1 + "\n", "name no paddlepaddle", false},
		{"no parameter-server line", "# python: 3.11-3.13\npaddlepaddle==3.0.0" + h1 + "\n", "# parameter-server: yes` or `no`", false},
		{"a bad parameter-server line", "# python: 3.11-3.13\n# parameter-server: maybe\npaddlepaddle==3.0.0" + h1 + "\n", "want yes or no", false},
		{"no python line", "# parameter-server: yes\npaddlepaddle==3.0.0" + h1 + "\n", "# python:", false},
		{"inverted python range", "# python: 3.13-3.11\n# parameter-server: yes\npaddlepaddle==3.0.0" + h1 + "\n", "# python:", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := parsePins([]byte(tt.raw))
			if tt.wantErr == "" {
				if err != nil || p.paddle != "3.0.0" || !p.hashed || p.parameterServer != tt.wantPS {
					t.Fatalf("parsePins = %+v, %v; want paddle 3.0.0, hashed, parameter server %v", p, err, tt.wantPS)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("parsePins error = %v; want one containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestCompareVersions(t *testing.T) {
	ordered := []string{"2.0", "2.0.0", "2.6.2", "3.0.0", "3.3.1", "3.10.0"}
	for i := 1; i < len(ordered); i++ {
		if c := CompareVersions(ordered[i-1], ordered[i]); c > 0 {
			t.Errorf("CompareVersions(%s, %s) = %d; want <= 0", ordered[i-1], ordered[i], c)
		}
		if c := CompareVersions(ordered[i], ordered[i-1]); c < 0 && ordered[i] != "2.0.0" {
			t.Errorf("CompareVersions(%s, %s) = %d; want >= 0", ordered[i], ordered[i-1], c)
		}
	}
}

func TestSupports(t *testing.T) {
	p := mustParsePins(embeddedRequirements)
	for version, want := range map[string]bool{
		"2.7.18": false, "3.10.13": false, "3.11.2": true, "3.11.7": true,
		"3.12.1": true, "3.13.0": true, "3.14.0": false, "4.0.0": false, "": false, "x.y": false,
	} {
		if got := p.supports(version); got != want {
			t.Errorf("supports(%q) = %v; want %v", version, got, want)
		}
	}
}

func TestRuntimeKey(t *testing.T) {
	p := mustParsePins(embeddedRequirements)
	py := pythonInfo{Version: "3.11.7", SysVersion: "3.11.7 (main, May  9 2026) [GCC 12.2.0]", BasePrefix: "/root/.pyenv/versions/3.11.7"}
	base := runtimeKey(p, py)
	if !regexp.MustCompile(`^paddle-3\.0\.0-py3\.11\.7-[0-9a-f]{12}$`).MatchString(base) {
		t.Fatalf("key %q does not name the pin, the Python and a short hash", base)
	}
	changedPin := p
	changedPin.raw = []byte(strings.Replace(string(p.raw), "numpy==2.4.6", "numpy==2.4.5", 1))
	tests := []struct {
		name     string
		p        pinSet
		py       pythonInfo
		wantSame bool
	}{
		{"same pin and interpreter", p, py, true},
		{"a changed pin", changedPin, py, false},
		{"another build of the same version", p, pythonInfo{Version: py.Version, SysVersion: "3.11.7 (main, Jan  1 2026) [GCC 13.1.0]", BasePrefix: py.BasePrefix}, false},
		{"the same version elsewhere", p, pythonInfo{Version: py.Version, SysVersion: py.SysVersion, BasePrefix: "/usr"}, false},
		{"another version", p, pythonInfo{Version: "3.12.1", SysVersion: "3.12.1 (main)", BasePrefix: py.BasePrefix}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := runtimeKey(tt.p, tt.py); (got == base) != tt.wantSame {
				t.Errorf("key %q vs %q: same = %v, want %v", got, base, got == base, tt.wantSame)
			}
		})
	}
}
