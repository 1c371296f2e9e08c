package schema

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// MaxRefSize is the largest file a {file: …} reference may name; certificates
// and kubeconfigs are a few KiB.
const MaxRefSize = 1 << 20

// LoadOptions tunes Load. The zero value reads the process environment.
type LoadOptions struct {
	// LookupEnv resolves {env: VAR} references; nil means os.LookupEnv.
	LookupEnv func(string) (string, bool)
}

// Load reads, parses, defaults and validates the fleet.yaml at path, and reads
// every {file: …} and {env: …} it refers to. It returns Errors listing every
// problem it found (syntax, structure, references and rules) in document
// order. A fleet.yaml that does not exist is an input error too (*InvalidError);
// other read failures are plain errors.
func Load(path string, opts LoadOptions) (*Fleet, error) {
	data, err := readCapped(path, MaxFileSize)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, Invalid(fmt.Errorf("read fleet: %w", err))
		}
		var tooBig *tooBigError
		if errors.As(err, &tooBig) {
			return nil, Errors{{File: path, Msg: fmt.Sprintf("file is larger than %d bytes: want a fleet.yaml (is this the right file?)", MaxFileSize)}}
		}
		return nil, fmt.Errorf("read fleet: %w", err)
	}
	f, errs, ok := parse(path, data)
	if !ok {
		return nil, errs
	}
	Default(f)
	errs = append(errs, resolveRefs(f, opts)...)
	errs = append(errs, dropUnder(validate(f), errs)...)
	if len(errs) > 0 {
		sortErrors(errs)
		return nil, errs
	}
	return f, nil
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
func parse(file string, data []byte) (*Fleet, Errors, bool) {
	var f Fleet
	errs, ok := decodeDocument(file, data, &f)
	if !ok {
		return nil, errs, false
	}
	f.File = file
	f.Dir = filepath.Dir(file)
	return &f, errs, true
}

type tooBigError struct{}

func (*tooBigError) Error() string { return "file too large" }

// readCapped reads a regular file of at most max bytes.
func readCapped(path string, max int64) ([]byte, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	st, err := fh.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, &fs.PathError{Op: "read", Path: path, Err: errors.New("not a regular file")}
	}
	if st.Size() > max {
		return nil, &tooBigError{}
	}
	data, err := io.ReadAll(io.LimitReader(fh, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > max {
		return nil, &tooBigError{}
	}
	return data, nil
}

// dropUnder removes the errors at or below a path that already has a decode
// error: a field that could not be decoded is zero, and saying so again
// ("required") would only repeat the first problem.
func dropUnder(errs, decodeErrs Errors) Errors {
	if len(decodeErrs) == 0 {
		return errs
	}
	var out Errors
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

// sortErrors puts errors in document order; errors without a line keep their
// relative order ahead of the rest.
func sortErrors(errs Errors) {
	sort.SliceStable(errs, func(i, j int) bool {
		a, b := errs[i], errs[j]
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		return a.Column < b.Column
	})
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
func (f *Fleet) refShape(path string, r *FileRef, forms int) Errors {
	var errs Errors
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
			errs = append(errs, f.Errorf(path+"."+x.name, "%s is not accepted here: want %s", x.name, formNames(forms)))
		}
	}
	if set != 1 && len(errs) == 0 {
		errs = append(errs, f.Errorf(path, "want exactly one of %s", formNames(forms)))
	}
	if r.Env != "" && !envNameRE.MatchString(r.Env) {
		errs = append(errs, f.Errorf(path+".env", "invalid environment variable name %q: want letters, digits and _ not starting with a digit", r.Env))
	}
	return errs
}

var envNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

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
		if reg.Kubeconfig != nil && reg.Mode == ModeManager {
			out = append(out, entry{fmt.Sprintf("spec.clusters[%d].registration.kubeconfig", i), reg.Kubeconfig, formFile | formEnv})
		}
		if reg.CACert != nil && reg.Mode == ModeVerrazzano {
			out = append(out, entry{fmt.Sprintf("spec.clusters[%d].registration.caCert", i), reg.CACert, formFile | formValue})
		}
	}
	return out
}

// resolveRefs fills Data of every well-formed FileRef; malformed ones are
// left for Validate to report.
func resolveRefs(f *Fleet, opts LoadOptions) Errors {
	lookup := opts.LookupEnv
	if lookup == nil {
		lookup = os.LookupEnv
	}
	var errs Errors
	for _, e := range f.refs() {
		r := e.ref
		if len(f.refShape(e.path, r, e.forms)) > 0 {
			continue
		}
		switch {
		case r.File != "":
			p := r.File
			if !filepath.IsAbs(p) {
				p = filepath.Join(f.Dir, p)
			}
			b, err := readCapped(p, MaxRefSize)
			if err != nil {
				var pe *fs.PathError
				var tooBig *tooBigError
				switch {
				case errors.As(err, &tooBig):
					err = fmt.Errorf("larger than %d bytes", MaxRefSize)
				case errors.As(err, &pe):
					err = pe.Err
				}
				errs = append(errs, f.Errorf(e.path+".file", "cannot read %q: %v: want a readable file (a relative path starts at the folder of fleet.yaml)", r.File, err))
				continue
			}
			r.Data = b
		case r.Env != "":
			v, ok := lookup(r.Env)
			if !ok || v == "" {
				errs = append(errs, f.Errorf(e.path+".env", "environment variable %s is not set or empty: want it to hold the content", r.Env))
				continue
			}
			r.Data = []byte(v)
		default:
			r.Data = []byte(r.Value)
		}
	}
	return errs
}
