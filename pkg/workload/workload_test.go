package workload_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	"fleetgen.dev/fleetgen/pkg/workload"
)

func TestContainers(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		obj  string
		want []workload.Container
	}{
		"pod": {`{kind: Pod, spec: {containers: [{name: a, image: nginx}], initContainers: [{name: i, image: busybox}]}}`,
			[]workload.Container{{"initContainers", "i", "busybox", "spec.initContainers[name=i].image"}, {"containers", "a", "nginx", "spec.containers[name=a].image"}}},
		"deployment": {`{kind: Deployment, spec: {template: {spec: {containers: [{name: a, image: "ghcr.io/x/y:1"}, {name: noimage}]}}}}`,
			[]workload.Container{{"containers", "a", "ghcr.io/x/y:1", "spec.template.spec.containers[name=a].image"}}},
		"cronjob": {`{kind: CronJob, spec: {jobTemplate: {spec: {template: {spec: {ephemeralContainers: [{name: d, image: debug}]}}}}}}`,
			[]workload.Container{{"ephemeralContainers", "d", "debug", "spec.jobTemplate.spec.template.spec.ephemeralContainers[name=d].image"}}},
		"custom kind shaped like a workload": {`{kind: Rollout, spec: {template: {spec: {containers: [{name: a, image: app}]}}}}`,
			[]workload.Container{{"containers", "a", "app", "spec.template.spec.containers[name=a].image"}}},
		"no name: by index": {`{kind: Pod, spec: {containers: [{name: a, image: x}, {image: app}]}}`,
			[]workload.Container{{"containers", "a", "x", "spec.containers[name=a].image"}, {"containers", "", "app", "spec.containers[1].image"}}},
		"a spec that is not a pod's": {`{kind: Service, spec: {containers: [{name: a, image: app}]}}`, nil},
		"wrong types":                {`{kind: Pod, spec: {containers: {name: a}}}`, nil},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var obj map[string]any
			if err := yaml.Unmarshal([]byte(tc.obj), &obj); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, workload.Containers(obj)); diff != "" {
				t.Errorf("Containers (-want +got):\n%s", diff)
			}
		})
	}
}
