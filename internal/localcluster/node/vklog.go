package node

import (
	"fmt"
	"maps"

	"github.com/go-logr/logr"
	vklog "github.com/virtual-kubelet/virtual-kubelet/log"
)

// vkLogger makes a logr.Logger virtual-kubelet's logger. virtual-kubelet logs
// every pod sync at Info and routine conditions (a completed pod skipped) at
// Warn, so those go to verbosity levels; its errors stay errors.
type vkLogger struct {
	l      logr.Logger
	fields vklog.Fields
}

var _ vklog.Logger = vkLogger{}

func newVKLogger(l logr.Logger) vklog.Logger { return vkLogger{l: l.WithName("virtual-kubelet")} }

func (v vkLogger) kv() []any {
	out := make([]any, 0, 2*len(v.fields))
	for k, val := range v.fields {
		if k != errorField {
			out = append(out, k, val)
		}
	}
	if err, ok := v.fields[errorField]; ok {
		out = append(out, errorField, fmt.Sprint(err))
	}
	return out
}

// errorField holds WithError's error.
const errorField = "err"

// errorAndKV separates the error of WithError, for logr's Error.
func (v vkLogger) errorAndKV() (error, []any) {
	err, _ := v.fields[errorField].(error)
	if err == nil {
		return nil, v.kv()
	}
	out := make([]any, 0, 2*len(v.fields))
	for k, val := range v.fields {
		if k != errorField {
			out = append(out, k, val)
		}
	}
	return err, out
}

func (v vkLogger) Debug(args ...any)            { v.l.V(4).Info(fmt.Sprint(args...), v.kv()...) }
func (v vkLogger) Debugf(f string, args ...any) { v.l.V(4).Info(fmt.Sprintf(f, args...), v.kv()...) }
func (v vkLogger) Info(args ...any)             { v.l.V(2).Info(fmt.Sprint(args...), v.kv()...) }
func (v vkLogger) Infof(f string, args ...any)  { v.l.V(2).Info(fmt.Sprintf(f, args...), v.kv()...) }
func (v vkLogger) Warn(args ...any)             { v.l.V(1).Info(fmt.Sprint(args...), v.kv()...) }
func (v vkLogger) Warnf(f string, args ...any)  { v.l.V(1).Info(fmt.Sprintf(f, args...), v.kv()...) }
func (v vkLogger) Error(args ...any) {
	err, kv := v.errorAndKV()
	v.l.Error(err, fmt.Sprint(args...), kv...)
}

func (v vkLogger) Errorf(f string, args ...any) {
	err, kv := v.errorAndKV()
	v.l.Error(err, fmt.Sprintf(f, args...), kv...)
}
func (v vkLogger) Fatal(args ...any)            { v.Error(args...) }
func (v vkLogger) Fatalf(f string, args ...any) { v.Errorf(f, args...) }

func (v vkLogger) WithField(k string, val any) vklog.Logger {
	return v.WithFields(vklog.Fields{k: val})
}

func (v vkLogger) WithFields(fields vklog.Fields) vklog.Logger {
	merged := maps.Clone(v.fields)
	if merged == nil {
		merged = vklog.Fields{}
	}
	maps.Copy(merged, fields)
	return vkLogger{l: v.l, fields: merged}
}

func (v vkLogger) WithError(err error) vklog.Logger { return v.WithField(errorField, err) }
