package schema

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"fleetgen.dev/fleetgen/internal/safefs"
	"fleetgen.dev/fleetgen/internal/strictyaml"
	"fleetgen.dev/fleetgen/pkg/problem"
)

// MaxFleetSize is the largest fleet.yaml Load and Parse accept, and MaxItems
// the most YAML separators (',' ':' '-' '[' '{' and line breaks, a bound on
// the number of YAML nodes) in it. The benchmark fleet of 100,000 clusters
// (test/synthetic, every default spelled out) is 15.8 MiB and 2.0 million
// separators; the caps admit twice that (about 330 bytes a cluster) and keep
// a runaway or hostile file from exhausting memory: one just under them
// (195,000 such clusters) is loaded and checked in about 9 s and 1.4 GiB
// (docs/security.md, Bounds).
const (
	MaxFleetSize = 32 << 20
	MaxItems     = 4_000_000
)

// MaxFileSize is the largest file a layer build, publish or an object of the
// model reads (pkg/layers, pkg/publish): manifests, not inventories, so it
// does not grow with the fleet.
const MaxFileSize = 16 << 20

// MaxRefSize is the largest content a {file: …} or {env: …} reference may
// hold; certificates and kubeconfigs are a few KiB.
const MaxRefSize = 1 << 20

// KubeconfigEnvPrefix starts the name of every environment variable that
// {env: VAR} may read unless LoadOptions.EnvPrefix allows another prefix.
const KubeconfigEnvPrefix = "FLEETGEN_KUBECONFIG_"

// LoadOptions tunes Load. The zero value reads the process environment.
type LoadOptions struct {
	// LookupEnv resolves {env: VAR} references; nil means os.LookupEnv.
	LookupEnv func(string) (string, bool)
	// EnvPrefix, when set, is a second prefix (besides KubeconfigEnvPrefix)
	// that the names of {env: VAR} references may start with. It comes from
	// the command line: fleet.yaml arrives in pull requests, so it may not
	// choose which variables of the CI job it reads.
	EnvPrefix string
}

// Load reads, parses, defaults and validates the fleet.yaml at path, and reads
// every {file: …} and {env: …} it refers to. It returns Errors listing every
// problem it found (syntax, structure, references and rules) in document
// order. A fleet.yaml that does not exist, is not a regular file or is too
// large is an input error too; other read failures are plain errors.
//
// {file: …} references are read only inside the folder of fleet.yaml
// (symlinks included), and {env: …} only for names starting with
// KubeconfigEnvPrefix or opts.EnvPrefix: fleet.yaml is untrusted input.
func Load(path string, opts LoadOptions) (*Fleet, error) {
	f, errs, err := LoadPartial(path, opts)
	if err != nil {
		return nil, err
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return f, nil
}

// LoadPartial is Load that keeps what it could read: the Fleet, defaulted,
// whenever fleet.yaml decodes to one (a misspelled field, a missing file or
// a rule that fails does not stop it: the field is left out, or zero), with
// every problem found, sorted, so that later checks can run on the parts
// without a problem (`fleetgen validate` reports every phase in one run).
// The Fleet is nil when there is none (a syntax error, an empty file), and
// err is set only when no problem list can be made (a bad EnvPrefix, an I/O
// failure, a fleet.yaml that does not exist). A Fleet with problems is not
// valid: nothing may be rendered from it.
func LoadPartial(path string, opts LoadOptions) (*Fleet, problem.Errors, error) {
	if err := checkEnvPrefix(opts.EnvPrefix); err != nil {
		return nil, nil, err
	}
	// The path is the user's, but its last part may be a symlink that a pull
	// request planted: fleet.yaml, too, is read inside its folder.
	data, err := safefs.ReadFile(filepath.Dir(path), filepath.Base(path), MaxFleetSize)
	if err != nil {
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return nil, nil, problem.Invalid(fmt.Errorf("read fleet: %w", err))
		case errors.Is(err, safefs.ErrTooLarge):
			return nil, problem.Errors{problem.TooLarge("", "file is larger than %d bytes: want a fleet.yaml (is this the right file?)", MaxFleetSize).At(path, 0, 0)}, nil
		case errors.Is(err, safefs.ErrNotRegular):
			return nil, problem.Errors{problem.Other("", "not a regular file (a folder, FIFO or device): want fleet.yaml as a regular file").At(path, 0, 0)}, nil
		case errors.Is(err, safefs.ErrOutside):
			return nil, problem.Errors{problem.Other("", "a symlink that leads out of its folder: want fleet.yaml as a regular file in the folder it names (the fleet's root)").At(path, 0, 0)}, nil
		}
		return nil, nil, fmt.Errorf("read fleet: %w", err)
	}
	f, errs, ok := parse(path, data)
	if !ok {
		return nil, errs, nil
	}
	Default(f)
	errs = append(errs, resolveRefs(f, opts)...)
	errs = append(errs, dropUnder(validate(f), errs)...)
	errs.Sort()
	return f, errs, nil
}

// credentialEnv are the prefixes of the environment variables that hold
// fleetgen's own credentials (Git, registry, SOPS keys); an EnvPrefix that
// would let fleet.yaml read one of them is refused.
var credentialEnv = []string{"FLEETGEN_GIT_", "FLEETGEN_REGISTRY_", "SOPS_"}

// checkEnvPrefix checks LoadOptions.EnvPrefix: a usage error when it is not
// the start of an environment variable name or covers fleetgen's own
// credentials.
func checkEnvPrefix(p string) error {
	if p == "" {
		return nil
	}
	if !envNameRE.MatchString(p) {
		return problem.Invalid(fmt.Errorf("invalid environment prefix %q: want letters, digits and _ not starting with a digit, e.g. CI_KUBECONFIG_", p))
	}
	for _, c := range credentialEnv {
		if strings.HasPrefix(c, p) || strings.HasPrefix(p, c) {
			return problem.Invalid(fmt.Errorf("environment prefix %q would let fleet.yaml read fleetgen's own credentials (%s…): want a prefix only kubeconfig variables use, e.g. CI_KUBECONFIG_", p, c))
		}
	}
	return nil
}

// Parse decodes fleet.yaml bytes strictly (unknown fields, duplicate keys,
// wrong kinds of node and aliases are errors, all of them reported); file names
// the input in errors and sets f.File and f.Dir. It records the line and column
// of every field for Validate. It neither defaults nor validates, and reads
// nothing.
func Parse(file string, data []byte) (*Fleet, error) {
	f, errs, _ := parse(file, data)
	if len(errs) > 0 {
		return nil, errs
	}
	return f, nil
}

// parse is Parse that also returns the partly decoded Fleet; ok is false when
// there is no Fleet at all (syntax error, empty file, top-level list…).
func parse(file string, data []byte) (*Fleet, problem.Errors, bool) {
	var f Fleet
	doc := fleetDoc(file)
	pos, errs, ok := strictyaml.Decode(data, &f, doc)
	if !ok {
		return nil, errs, false
	}
	f.pos, f.src = pos, &posSource{data: data, doc: doc}
	f.File = file
	f.Dir = filepath.Dir(file)
	return &f, errs, true
}

func fleetDoc(file string) strictyaml.Doc {
	return strictyaml.Doc{File: file, MaxSize: MaxFleetSize, MaxItems: MaxItems, Name: "fleet.yaml", Kind: Kind, APIVersion: APIVersion}
}

// dropUnder removes the errors at or below a path that already has a decode
// error: a field that could not be decoded is zero, and saying so again
// ("required") would only repeat the first problem.
func dropUnder(errs, decodeErrs problem.Errors) problem.Errors {
	if len(decodeErrs) == 0 {
		return errs
	}
	var out problem.Errors
next:
	for _, e := range errs {
		for _, d := range decodeErrs {
			if d.Path != "" && (e.Path == d.Path || strings.HasPrefix(e.Path, d.Path+".") || strings.HasPrefix(e.Path, d.Path+"[")) {
				continue next
			}
		}
		out = append(out, e)
	}
	return out
}

// Which forms of FileRef each field accepts.
const (
	formFile = 1 << iota
	formValue
	formEnv
)

func formNames(forms int) string {
	var names []string
	if forms&formFile != 0 {
		names = append(names, "{file: PATH}")
	}
	if forms&formValue != 0 {
		names = append(names, "{value: …}")
	}
	if forms&formEnv != 0 {
		names = append(names, "{env: VAR}")
	}
	return strings.Join(names, " or ")
}

// refShape checks that exactly one allowed form of r is set and returns the
// problems; Validate reports them and resolveRefs skips such a reference.
func (f *Fleet) refShape(path string, r *FileRef, forms int) problem.Errors {
	var errs problem.Errors
	set := 0
	for _, x := range []struct {
		name string
		val  string
		form int
	}{{"file", r.File, formFile}, {"value", r.Value, formValue}, {"env", r.Env, formEnv}} {
		if x.val == "" {
			continue
		}
		set++
		if forms&x.form == 0 {
			errs = append(errs, f.At(problem.NotApplicable(path+"."+x.name, "%s is not accepted here: want %s", x.name, formNames(forms))))
		}
	}
	if set != 1 && len(errs) == 0 {
		errs = append(errs, f.At(problem.Required(path, "want exactly one of %s", formNames(forms))))
	}
	if r.Env != "" && !envNameRE.MatchString(r.Env) {
		errs = append(errs, f.At(problem.InvalidValue(path+".env", "invalid environment variable name %q: want letters, digits and _ not starting with a digit", r.Env)))
	}
	return errs
}

var envNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// FileRefs returns the {file: …} references of the fields fleet.yaml reads
// them for (slash paths relative to f.Dir), sorted, each once.
func (f *Fleet) FileRefs() []string {
	seen := map[string]bool{}
	var out []string
	for _, e := range f.refs() {
		if p := e.ref.File; p != "" && !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	sort.Strings(out)
	return out
}

// refs lists every FileRef of f that its field's mode uses, with its path
// and accepted forms.
func (f *Fleet) refs() []struct {
	path  string
	ref   *FileRef
	forms int
} {
	type entry = struct {
		path  string
		ref   *FileRef
		forms int
	}
	var out []entry
	if r := f.Spec.Manager.APIServerCA; r != nil {
		out = append(out, entry{"spec.manager.apiServerCA", r, formFile | formValue})
	}
	for i := range f.Spec.Clusters {
		// A reference the cluster's mode does not use is an error to remove,
		// not something to read.
		reg := &f.Spec.Clusters[i].Registration
		m := LookupMode(reg.Mode)
		if m == nil {
			continue
		}
		if reg.Kubeconfig != nil && m.Kubeconfig {
			out = append(out, entry{fmt.Sprintf("spec.clusters[%d].registration.kubeconfig", i), reg.Kubeconfig, formFile | formEnv})
		}
		if reg.CACert != nil && m.CACert {
			out = append(out, entry{fmt.Sprintf("spec.clusters[%d].registration.caCert", i), reg.CACert, formFile | formValue})
		}
		if a := f.Spec.Clusters[i].APIServer; a != nil && a.CA != nil && !m.Kubeconfig {
			out = append(out, entry{fmt.Sprintf("spec.clusters[%d].apiServer.ca", i), a.CA, formFile | formValue})
		}
	}
	for _, r := range f.verifyRefs() {
		out = append(out, entry{r.path, r.ref, formFile})
	}
	return out
}

// resolveRefs fills Data of every well-formed FileRef; malformed ones are
// left for Validate to report.
func resolveRefs(f *Fleet, opts LoadOptions) problem.Errors {
	lookup := opts.LookupEnv
	if lookup == nil {
		lookup = os.LookupEnv
	}
	var (
		errs    problem.Errors
		root    *safefs.Root
		rootErr error
	)
	// Each file is read once, however many references name it (clusters
	// sharing a kubeconfig or a CA).
	type read struct {
		data []byte
		err  error
	}
	reads := map[string]read{}
	defer func() {
		if root != nil {
			root.Close()
		}
	}()
	for _, e := range f.refs() {
		r := e.ref
		if len(f.refShape(e.path, r, e.forms)) > 0 {
			continue
		}
		switch {
		case r.File != "":
			if root == nil && rootErr == nil {
				root, rootErr = safefs.OpenRoot(f.Dir)
			}
			if rootErr != nil {
				errs = append(errs, f.At(problem.Other(e.path+".file", "cannot open the folder of fleet.yaml: %v", rootErr)))
				continue
			}
			rd, ok := reads[r.File]
			if !ok {
				rd.data, rd.err = root.ReadFile(filepath.FromSlash(r.File), MaxRefSize)
				reads[r.File] = rd
			}
			b, err := rd.data, rd.err
			if err != nil {
				errs = append(errs, f.At(fileRefProblem(e.path+".file", r.File, err)))
				continue
			}
			r.Data = b
		case r.Env != "":
			if !strings.HasPrefix(r.Env, KubeconfigEnvPrefix) && (opts.EnvPrefix == "" || !strings.HasPrefix(r.Env, opts.EnvPrefix)) {
				allowed := KubeconfigEnvPrefix
				if opts.EnvPrefix != "" {
					allowed += " or " + opts.EnvPrefix
				}
				errs = append(errs, f.At(problem.Other(e.path+".env", "fleetgen does not read %s: want a variable whose name starts with %s (the command line may allow another prefix with --kubeconfig-env-prefix; fleet.yaml may not)", r.Env, allowed)))
				continue
			}
			v, ok := lookup(r.Env)
			if !ok || v == "" {
				errs = append(errs, f.At(problem.UnsetEnv(e.path+".env", "environment variable %s is not set or empty: want it to hold the content", r.Env)))
				continue
			}
			if len(v) > MaxRefSize {
				errs = append(errs, f.At(problem.Other(e.path+".env", "environment variable %s holds more than %d bytes: want a kubeconfig", r.Env, MaxRefSize)))
				continue
			}
			r.Data = []byte(v)
		default:
			r.Data = []byte(r.Value)
		}
	}
	return errs
}

// fileRefProblem says why the {file: name} reference at path could not be
// read and what would be valid. It names the path as fleet.yaml spells it, never the
// content or where a symlink points.
func fileRefProblem(path, name string, err error) *problem.FieldError {
	switch {
	case errors.Is(err, safefs.ErrOutside) && filepath.IsAbs(name):
		return problem.Other(path, "%q is an absolute path: want a path relative to the folder of fleet.yaml, inside it", name)
	case errors.Is(err, safefs.ErrOutside) && !filepath.IsLocal(filepath.FromSlash(name)):
		return problem.Other(path, "%q leads out of the folder of fleet.yaml: want a path inside it (no ..)", name)
	case errors.Is(err, safefs.ErrOutside):
		return problem.Other(path, "%q leads out of the folder of fleet.yaml through a symlink: want a file inside it", name)
	case errors.Is(err, safefs.ErrNotRegular):
		return problem.Other(path, "%q is not a regular file (a folder, FIFO or device): want a regular file", name)
	case errors.Is(err, safefs.ErrTooLarge):
		return problem.Other(path, "%q is larger than %d bytes: want a certificate or kubeconfig file", name, MaxRefSize)
	case errors.Is(err, fs.ErrNotExist):
		return problem.Unreadable(path, "cannot read %q: no such file: want a file in the folder of fleet.yaml (a relative path starts there)", name)
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return problem.Unreadable(path, "cannot read %q: %v: want a readable file in the folder of fleet.yaml", name, err)
}
