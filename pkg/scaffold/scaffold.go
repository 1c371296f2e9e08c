// Package scaffold is the starting fleet `fleetgen init` writes: fleet.yaml
// with a comment on every stanza, one layer folder, a placeholder kubeconfig
// and .sops.yaml, such that the fleet validates and renders as written once
// `fleetgen mirror` has pinned its one image. Files is pure: the same options
// give the same bytes.
package scaffold

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"sort"
	"strings"
	"text/template"
)

// Options are what the starting fleet is made of. Empty fields take the
// placeholders of DefaultOptions.
type Options struct {
	// Name is metadata.name, a DNS-1123 label (Name derives one from a
	// folder's name).
	Name string
	// Manager is spec.manager.apiServerURL: where agents register.
	Manager string
	// Registry is spec.registry.host, HOST[:PORT] of the private registry.
	Registry string
	// Source is spec.source.url: oci://… makes an OCI source, anything
	// else Git.
	Source string
	// AgeRecipients are spec.encryption.sops.ageRecipients.
	AgeRecipients []string
}

// DefaultOptions are the placeholders of a starting fleet: hosts under
// example.com that the comments say to replace, and no age recipient (the
// caller supplies one).
func DefaultOptions() Options {
	return Options{
		Name:     "fleet",
		Manager:  "https://fleet.example.com:6443",
		Registry: "registry.example.com",
		Source:   "https://git.example.com/platform/fleet-gitops.git",
	}
}

// File is one file of the starting fleet.
type File struct {
	// Path is slash-separated, relative to the fleet's folder.
	Path string
	Data []byte
}

// FleetFile is the starting fleet's fleet.yaml, relative to its folder.
const FleetFile = "fleet.yaml"

// templates holds the starting fleet as it lies in its folder: each file a
// text/template of Options.
//
//go:embed all:template
var templates embed.FS

var tmpl = template.Must(template.New("").Funcs(template.FuncMap{"yaml": yamlString}).ParseFS(templates, "template/*.yaml", "template/*/*.yaml"))

// Files returns the starting fleet for o, sorted by path. It needs at least
// one age recipient: the manager-mode cluster's kubeconfig Secret is sealed
// for it.
func Files(o Options) ([]File, error) {
	d := DefaultOptions()
	for _, f := range []struct {
		v   *string
		def string
	}{{&o.Name, d.Name}, {&o.Manager, d.Manager}, {&o.Registry, d.Registry}, {&o.Source, d.Source}} {
		if *f.v == "" {
			*f.v = f.def
		}
	}
	if len(o.AgeRecipients) == 0 {
		return nil, fmt.Errorf("scaffold: no age recipient: the manager-mode cluster's kubeconfig is sealed for one")
	}
	data := struct {
		Options
		Kind string
	}{o, "git"}
	if strings.HasPrefix(o.Source, "oci://") {
		data.Kind = "oci"
	}
	var out []File
	err := fs.WalkDir(templates, "template", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		var b bytes.Buffer
		rel := strings.TrimPrefix(p, "template/")
		// ParseFS names each template by its base name: they are unique.
		if err := tmpl.ExecuteTemplate(&b, path.Base(p), data); err != nil {
			return fmt.Errorf("scaffold %s: %w", rel, err)
		}
		out = append(out, File{Path: rel, Data: b.Bytes()})
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, nil
}

var (
	// plain is a value YAML reads as the same string without quotes, but
	// for the words and numbers of special.
	plain   = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:/@+-]*$`)
	special = regexp.MustCompile(`^([0-9.+-]+|true|false|null|yes|no|on|off|~)$`)
)

// yamlString writes s as a YAML string: plain when it reads back as itself
// (no space, not a number, bool or null), else double-quoted.
func yamlString(s string) string {
	if plain.MatchString(s) && !special.MatchString(strings.ToLower(s)) {
		return s
	}
	b, _ := json.Marshal(s) // a JSON string is a YAML double-quoted string
	return string(b)
}

var dnsLabel = regexp.MustCompile(`[^a-z0-9-]+`)

// Name derives a fleet name (a DNS-1123 label) from a folder's name: lower
// case, other characters as '-', at most 63; "fleet" when nothing is left.
func Name(folder string) string {
	n := dnsLabel.ReplaceAllString(strings.ToLower(folder), "-")
	if len(n) > 63 {
		n = n[:63]
	}
	n = strings.Trim(n, "-")
	if n == "" {
		return "fleet"
	}
	return n
}
