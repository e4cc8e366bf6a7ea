package podcontract

import (
	"testing"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/internal/testutil"
)

func TestGangSchedulerFor(t *testing.T) {
	opts := GangSettings{Default: GangVolcano, SchedulerPluginsName: DefaultSchedulerPluginsName}
	volcanoTemplate := testutil.MakePaddleJob("j", "ns").PS(1).Workers(2).Obj()
	volcanoTemplate.Spec.Worker.Template.Spec.SchedulerName = "volcano"
	pluginsTemplate := testutil.MakePaddleJob("j", "ns").Workers(2).Obj()
	pluginsTemplate.Spec.Worker.Template.Spec.SchedulerName = DefaultSchedulerPluginsName
	withPolicy := testutil.MakePaddleJob("j", "ns").Workers(2).Obj()
	withPolicy.Spec.SchedulingPolicy = &paddlev1.SchedulingPolicy{Queue: "q"}
	pluginsDefault := opts
	pluginsDefault.Default = GangSchedulerPlugins
	noneDefault := opts
	noneDefault.Default = GangNone

	tests := []struct {
		name string
		job  *paddlev1.PaddleJob
		opts GangSettings
		want string
	}{
		{"no gang scheduling asked for", testutil.MakePaddleJob("j", "ns").Workers(2).Obj(), opts, ""},
		{"a template names volcano (paddle-operator's example 4)", volcanoTemplate, opts, GangVolcano},
		{"a template names scheduler-plugins", pluginsTemplate, opts, GangSchedulerPlugins},
		{"schedulingPolicy with the default gang scheduler", withPolicy, opts, GangVolcano},
		{"schedulingPolicy, operator defaults to scheduler-plugins", withPolicy, pluginsDefault, GangSchedulerPlugins},
		{"schedulingPolicy, gang scheduling off", withPolicy, noneDefault, ""},
	}
	for _, tc := range tests {
		if got := GangScheduler(&tc.job.Spec, tc.opts); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}
