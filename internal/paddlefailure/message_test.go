package paddlefailure

import "testing"

func TestKeyLine(t *testing.T) {
	for _, tc := range []struct{ name, message, want string }{
		{"empty", "\n", ""},
		{"one line", "exit status 3\n", "exit status 3"},
		{"a traceback", "Traceback (most recent call last):\n  File \"t.py\", line 1, in <module>\nKeyError: 'lr'\n", "KeyError: 'lr'"},
		{"a bare exception", "    assert x\n           ^\nAssertionError\n", "AssertionError"},
		{"a dotted exception", "gloo.IoException: Connection refused\n", "gloo.IoException: Connection refused"},
		{"Paddle's error inside another, then shutdown lines", "RuntimeError: In user code:\n\n    NotFoundError: Input id (3) is not in current rows table.\n      [operator < lookup_table > error]\nI1206 08:21:16 tcp_store.cc:292] quit\n",
			"NotFoundError: Input id (3) is not in current rows table."},
		{"no exception", "step 1\nstep 2\n\n", "step 2"},
		{"words that look like one", "The Error: was printed\n", "The Error: was printed"},
	} {
		if got := KeyLine(tc.message); got != tc.want {
			t.Errorf("%s: KeyLine = %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestParseFindsWhatStringWrote(t *testing.T) {
	e := &Explanation{ID: "missing-module", Cause: "The program imports the module a.b, which it lacks.", Fix: "Add it: see the Dockerfile.", Doc: DocPath + "#a_b-c"}
	for _, msg := range []string{
		e.String(),
		"pod j-worker-0: container \"paddle\" exited with code 1 (Error): ModuleNotFoundError: No module named 'a.b'. " + e.String() + " (and 2 more failed pods)",
		"every pod runs again; restart 1 (backoffLimit 6), restarting all 4 pods of the job after x: " + e.String(),
	} {
		if got := Parse(msg); got == nil || *got != *e {
			t.Errorf("Parse(%q) = %+v", msg, got)
		}
	}
	for _, msg := range []string{"", "Known failure [x]: cause only", "Known failure [Bad Id]: c Fix: f See " + DocPath + "#x"} {
		if got := Parse(msg); got != nil {
			t.Errorf("Parse(%q) = %+v, want nil", msg, got)
		}
	}
}
