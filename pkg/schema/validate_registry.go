package schema

import (
	"fmt"
	"strings"

	"fleetgen.dev/fleetgen/pkg/problem"
)

func (v *validator) registry() {
	r := &v.f.Spec.Registry
	if r.Host == "" {
		v.add(problem.Required("spec.registry.host", "registry host is required: want HOST[:PORT] of the private mirror, e.g. contoso.azurecr.io"))
	} else if why := hostPort(r.Host); why != "" {
		v.add(problem.InvalidValue("spec.registry.host", "invalid registry host %q: %s", r.Host, why))
	}
	if r.Prefix != "" {
		for _, p := range strings.Split(r.Prefix, "/") {
			if !repoPathRE.MatchString(p) {
				v.add(problem.InvalidValue("spec.registry.prefix", "invalid repository prefix %q: want lower case path components separated by '/', e.g. mirror or team/mirror", r.Prefix))
				break
			}
		}
	}
	switch r.Layout {
	case LayoutStripHost, LayoutPreserveHost:
	default:
		v.add(problem.NotSupported("spec.registry.layout", "unsupported value %q: want strip-host or preserve-host", r.Layout))
	}
}

func (v *validator) images() {
	for i, img := range v.f.Spec.Images {
		if why := imageRef(img); why != "" {
			v.add(problem.InvalidValue(fmt.Sprintf("spec.images[%d]", i), "invalid image %q: %s", img, why))
		}
	}
}
