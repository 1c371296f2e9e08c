package schema

import "fmt"

// output checks the fields that shape the output tree beyond single values:
// how each cluster's Flux was bootstrapped, and the names that bootstrap owns.
func (v *validator) output() {
	s := &v.f.Spec.Source
	switch s.Bootstrap {
	case BootstrapFlux:
		// Flux's own Kustomization and source are called flux-system; a layer
		// of that name would replace them on every cluster.
		for i, l := range v.f.Spec.Layers {
			if l.Name == fluxSystem {
				v.add(fmt.Sprintf("spec.layers[%d].name", i), "layer name %q is reserved: it is the Kustomization `flux bootstrap` made; want another name", l.Name)
			}
		}
	case BootstrapNone:
	default:
		v.add("spec.source.bootstrap", "unsupported value %q: want flux (clusters bootstrapped with `flux bootstrap --path clusters/<name>`) or none (fleetgen writes each cluster's source)", s.Bootstrap)
	}
}

// fluxSystem is the name `flux bootstrap` gives its namespace, source and
// Kustomization.
const fluxSystem = "flux-system"
