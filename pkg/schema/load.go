package schema

import (
	"fmt"
	"os"
	"path/filepath"

	"sigs.k8s.io/yaml"
)

// LoadOptions tunes Load. The zero value reads the process environment.
type LoadOptions struct {
	// LookupEnv resolves {env: VAR} references; nil means os.LookupEnv.
	LookupEnv func(string) (string, bool)
}

// Load reads, parses, defaults and validates the fleet.yaml at path, and reads
// every {file: …} and {env: …} it refers to. It returns Errors listing every
// problem it found.
//
// SKELETON: strict decode without positions; pkg/schema owner replaces this.
func Load(path string, opts LoadOptions) (*Fleet, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	f, err := Parse(path, data)
	if err != nil {
		return nil, err
	}
	Default(f)
	if err := resolveRefs(f, opts); err != nil {
		return nil, err
	}
	if err := Validate(f); err != nil {
		return nil, err
	}
	return f, nil
}

// Parse decodes fleet.yaml bytes strictly (unknown fields and duplicate keys are
// errors); file names the input in errors and sets f.File and f.Dir. It neither
// defaults nor validates, and reads nothing.
func Parse(file string, data []byte) (*Fleet, error) {
	var f Fleet
	if err := yaml.UnmarshalStrict(data, &f); err != nil {
		return nil, Errors{{File: file, Msg: err.Error()}}
	}
	f.File = file
	f.Dir = filepath.Dir(file)
	return &f, nil
}

func resolveRefs(f *Fleet, opts LoadOptions) error {
	lookup := opts.LookupEnv
	if lookup == nil {
		lookup = os.LookupEnv
	}
	var errs Errors
	read := func(path string, r *FileRef) {
		if r == nil {
			return
		}
		switch {
		case r.File != "":
			b, err := os.ReadFile(filepath.Join(f.Dir, r.File))
			if err != nil {
				errs = append(errs, &FieldError{File: f.File, Path: path + ".file", Msg: fmt.Sprintf("cannot read %q", r.File)})
				return
			}
			r.Data = b
		case r.Env != "":
			v, ok := lookup(r.Env)
			if !ok || v == "" {
				errs = append(errs, &FieldError{File: f.File, Path: path + ".env", Msg: fmt.Sprintf("environment variable %s is not set", r.Env)})
				return
			}
			r.Data = []byte(v)
		default:
			r.Data = []byte(r.Value)
		}
	}
	read("spec.manager.apiServerCA", f.Spec.Manager.APIServerCA)
	for i := range f.Spec.Clusters {
		c := &f.Spec.Clusters[i]
		read(fmt.Sprintf("spec.clusters[%d].registration.kubeconfig", i), c.Registration.Kubeconfig)
		read(fmt.Sprintf("spec.clusters[%d].registration.caCert", i), c.Registration.CACert)
	}
	if len(errs) > 0 {
		return errs
	}
	return nil
}
