package schema

import "fleetgen.dev/fleetgen/pkg/problem"

// Validate checks a defaulted Fleet against every rule of SPEC §1 and returns
// Errors listing every problem in document order, or nil. Each error carries
// the file, line and column of the field (or of its nearest parent that
// fleet.yaml spells out), the field path, what is wrong and what would be
// valid. It reads nothing: {file: …} and {env: …} contents are checked only
// when Load has filled them in.
func Validate(f *Fleet) error {
	errs := validate(f)
	if len(errs) == 0 {
		return nil
	}
	errs.Sort()
	return errs
}

type validator struct {
	f    *Fleet
	errs problem.Errors
	// okLabels remembers label keys and values found valid: a big fleet
	// repeats a few of them on every cluster.
	okLabels map[string]bool
	// kubeconfigs remembers what CheckKubeconfig said of each content: a
	// file several clusters reference is checked once.
	kubeconfigs map[string]error
}

// kubeconfig is CheckKubeconfig, once per distinct content.
func (v *validator) kubeconfig(data []byte) error {
	if err, ok := v.kubeconfigs[string(data)]; ok {
		return err
	}
	err := CheckKubeconfig(data)
	if v.kubeconfigs == nil {
		v.kubeconfigs = map[string]error{}
	}
	v.kubeconfigs[string(data)] = err
	return err
}

func (v *validator) add(e *problem.FieldError) { v.errs = append(v.errs, v.f.At(e)) }

func validate(f *Fleet) problem.Errors {
	v := &validator{f: f, okLabels: map[string]bool{}}
	v.top()
	v.manager()
	v.registry()
	v.source()
	v.sourceMirrors()
	v.hostSecurity()
	v.verify()
	v.output()
	v.encryption()
	v.images()
	v.layers()
	v.groups()
	v.defaults()
	v.clusters()
	v.limits()
	v.apiServers() // spec.clusters[].apiServer
	v.agents()     // spec.clusters[].agent
	v.deliveries() // spec.deliveries
	v.argocd()     // spec.argocd
	v.managers()   // spec.kubefleet, spec.sveltos, spec.ocm, every manager's host, clusters[].identity
	v.shards()     // spec.shards, spec.clusters[].shard
	return v.errs
}

// Sections of the spec, in document order.

func (v *validator) top() {
	f := v.f
	switch f.APIVersion {
	case APIVersion:
	case "":
		v.add(problem.Required("apiVersion", "apiVersion is required: want %s", APIVersion))
	default:
		v.add(problem.NotSupported("apiVersion", "unsupported apiVersion %q: want %s", f.APIVersion, APIVersion))
	}
	switch f.Kind {
	case Kind:
	case "":
		v.add(problem.Required("kind", "kind is required: want %s", Kind))
	default:
		v.add(problem.NotSupported("kind", "unsupported kind %q: want %s", f.Kind, Kind))
	}
	v.name("metadata.name", "name", f.Metadata.Name)
}

// Sorted returns errs in document order (by field path, spec.clusters[10]
// after spec.clusters[9], then by message), as Validate reports them; nil when
// errs is empty. Checks outside this package that locate their findings in
// fleet.yaml use it so that every input error reads alike.
func Sorted(errs problem.Errors) error {
	if len(errs) == 0 {
		return nil
	}
	errs.Sort()
	return errs
}
