package client

import (
	"testing"
	"time"
)

func TestLogOptions(t *testing.T) {
	since := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	o := LogOptions{Container: "paddle", Previous: true, Timestamps: true, TailLines: 5, Since: 1500 * time.Millisecond, SinceTime: since}.podLogOptions()
	if o.Container != "paddle" || !o.Previous || !o.Timestamps || *o.TailLines != 5 || *o.SinceSeconds != 2 || !o.SinceTime.Time.Equal(since) {
		t.Errorf("%+v", o)
	}
	if o := (LogOptions{}).podLogOptions(); o.TailLines != nil || o.SinceSeconds != nil || o.SinceTime != nil {
		t.Errorf("options unset give %+v", o)
	}
}
