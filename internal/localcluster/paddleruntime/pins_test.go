package paddleruntime

import (
	"regexp"
	"strings"
	"testing"
)

func TestEmbeddedPins(t *testing.T) {
	p, err := parsePins(embeddedRequirements)
	if err != nil {
		t.Fatal(err)
	}
	if p.paddle != "3.0.0" || PinnedPaddleVersion() != "3.0.0" {
		t.Errorf("paddle pin = %q, PinnedPaddleVersion() = %q; want 3.0.0", p.paddle, PinnedPaddleVersion())
	}
	if got := p.pythonRange(); got != "CPython 3.11-3.13" {
		t.Errorf("python range = %q", got)
	}
	// protobuf 4.21+ is what Paddle 3.0.0 needs; a float would defeat --no-deps.
	if !strings.Contains(string(embeddedRequirements), "\nprotobuf==4.25.5\n") {
		t.Error("requirements.txt does not pin protobuf==4.25.5")
	}
}

func TestParsePins(t *testing.T) {
	const header = "# python: 3.11-3.13\n"
	tests := []struct {
		name, raw, wantErr string
	}{
		{"exact pins", header + "paddlepaddle==3.0.0\nnumpy==2.4.6\n", ""},
		{"comments and blanks", "# why\n\n" + header + "PaddlePaddle==3.0.0 \n", ""},
		{"a floating pin", header + "paddlepaddle==3.0.0\nnumpy>=2\n", `line 3: "numpy>=2" is not an exact pin`},
		{"no paddle", header + "numpy==2.4.6\n", "pins no paddlepaddle"},
		{"no python line", "paddlepaddle==3.0.0\n", "# python:"},
		{"inverted python range", "# python: 3.13-3.11\npaddlepaddle==3.0.0\n", "# python:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := parsePins([]byte(tt.raw))
			if tt.wantErr == "" {
				if err != nil || p.paddle != "3.0.0" {
					t.Fatalf("parsePins = %+v, %v; want paddle 3.0.0", p, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("parsePins error = %v; want one containing %q", err, tt.wantErr)
			}
		})
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
