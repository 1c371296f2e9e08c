// Package workload finds the container images of one Kubernetes object: the
// pod templates of every workload kind. It is the one home of that rule, so
// that the images of a layer's build (pkg/images) and of a rendered Helm
// chart (pkg/charts) are found alike.
package workload

import "strconv"

// Container is one container of an object's pod template.
type Container struct {
	// Field is the list it sits in: initContainers, containers or
	// ephemeralContainers.
	Field string
	// Name is the container's name.
	Name string
	// Image is the image reference as written.
	Image string
	// Path is the image's field in obj, as review.FieldChanges writes paths:
	// spec.template.spec.containers[name=app].image (by index when the
	// container has no name).
	Path string
}

// Containers returns the containers with an image in obj (an object as plain
// JSON values), in document order: a Pod's spec, spec.template.spec of every
// workload (Deployment, StatefulSet, DaemonSet, ReplicaSet, Job,
// ReplicationController, and any custom kind shaped like them) and CronJob's
// spec.jobTemplate.spec.template.spec; in each, initContainers, containers,
// then ephemeralContainers.
func Containers(obj map[string]any) []Container {
	var out []Container
	for _, ps := range podSpecs(obj) {
		for _, field := range []string{"initContainers", "containers", "ephemeralContainers"} {
			list, _ := ps.spec[field].([]any)
			for i, c := range list {
				cm, _ := c.(map[string]any)
				if img, _ := cm["image"].(string); img != "" {
					name, _ := cm["name"].(string)
					item := "[" + strconv.Itoa(i) + "]"
					if name != "" {
						item = "[name=" + name + "]"
					}
					out = append(out, Container{Field: field, Name: name, Image: img, Path: ps.path + "." + field + item + ".image"})
				}
			}
		}
	}
	return out
}

// podSpec is a pod spec of an object and its path there.
type podSpec struct {
	path string
	spec map[string]any
}

func podSpecs(o map[string]any) []podSpec {
	var out []podSpec
	if kind, _ := o["kind"].(string); kind == "Pod" {
		if s := object(o, "spec"); s != nil {
			out = append(out, podSpec{"spec", s})
		}
	}
	if s := object(o, "spec", "template", "spec"); s != nil {
		out = append(out, podSpec{"spec.template.spec", s})
	}
	if s := object(o, "spec", "jobTemplate", "spec", "template", "spec"); s != nil {
		out = append(out, podSpec{"spec.jobTemplate.spec.template.spec", s})
	}
	return out
}

func object(m map[string]any, keys ...string) map[string]any {
	for _, k := range keys {
		next, ok := m[k].(map[string]any)
		if !ok {
			return nil
		}
		m = next
	}
	return m
}
