package mirror

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"fleetgen.dev/fleetgen/pkg/lock"
	"fleetgen.dev/fleetgen/pkg/problem"
	"fleetgen.dev/fleetgen/pkg/schema"
)

// Pair is one copy: a normalised source reference and its mirror target.
type Pair struct {
	Source string // e.g. ghcr.io/kubereboot/kured:1.12.0
	Target string // e.g. contoso.azurecr.io/kubereboot/kured:1.12.0
}

// Plan maps refs (normalised or not) to targets in reg per its layout and
// prefix, deduplicated and sorted by Source. Two sources that land on one target
// repository are an input error.
//
// With layout strip-host (the default, as `az acr import` names things),
// ghcr.io/kubereboot/kured:1.12.0 becomes <host>/<prefix>/kubereboot/kured:1.12.0
// and Docker Hub's busybox becomes <host>/<prefix>/library/busybox:latest; with
// preserve-host the source host stays as the first path element:
// <host>/<prefix>/ghcr.io/kubereboot/kured:1.12.0. The target keeps the source's
// tag; a source given only by digest gets a target pinned by the same digest.
func Plan(reg schema.Registry, refs []string) ([]Pair, error) {
	host := strings.TrimSuffix(strings.TrimSpace(reg.Host), "/")
	if host == "" {
		return nil, problem.Invalid(errors.New("spec.registry.host: empty: want the mirror registry, e.g. contoso.azurecr.io"))
	}
	prefix := strings.Trim(reg.Prefix, "/")
	layout := reg.Layout
	if layout == "" {
		layout = schema.LayoutStripHost
	}
	if layout != schema.LayoutStripHost && layout != schema.LayoutPreserveHost {
		return nil, problem.Invalid(fmt.Errorf("spec.registry.layout: unsupported value %q: want %s or %s", layout, schema.LayoutStripHost, schema.LayoutPreserveHost))
	}

	var errs []string
	seen := map[string]bool{}
	var pairs []Pair
	// owner maps a target repository to the source repository that claimed it.
	owner := map[string]string{}
	clash := map[string]map[string]bool{}
	for _, ref := range refs {
		src, err := lock.Normalize(ref)
		if err != nil {
			errs = append(errs, fmt.Sprintf("image %q: invalid reference: %v", ref, err))
			continue
		}
		if seen[src] {
			continue
		}
		seen[src] = true
		p := parseRef(src)
		repo := host
		if prefix != "" {
			repo += "/" + prefix
		}
		if layout == schema.LayoutPreserveHost {
			repo += "/" + p.host
		}
		repo += "/" + p.path
		srcRepo := p.host + "/" + p.path
		if o, ok := owner[repo]; !ok {
			owner[repo] = srcRepo
		} else if o != srcRepo {
			if clash[repo] == nil {
				clash[repo] = map[string]bool{o: true}
			}
			clash[repo][srcRepo] = true
		}
		target := repo
		switch {
		case p.tag != "":
			target += ":" + p.tag
		case p.digest != "":
			target += "@" + p.digest
		}
		pairs = append(pairs, Pair{Source: src, Target: target})
	}
	for repo, srcs := range clash {
		names := make([]string, 0, len(srcs))
		for s := range srcs {
			names = append(names, s)
		}
		sort.Strings(names)
		errs = append(errs, fmt.Sprintf("%s and %s would both be mirrored to %s: rename one or use spec.registry.layout %s",
			strings.Join(names[:len(names)-1], ", "), names[len(names)-1], repo, schema.LayoutPreserveHost))
	}
	if len(errs) > 0 {
		sort.Strings(errs)
		return nil, problem.Invalid(errors.New(strings.Join(errs, "\n")))
	}
	sort.Slice(pairs, func(i, j int) bool { return pairs[i].Source < pairs[j].Source })
	return pairs, nil
}

// ref is a normalised reference taken apart.
type ref struct {
	host, path, tag, digest string
}

// parseRef splits a normalised reference (host/path[:tag][@digest]).
func parseRef(s string) ref {
	var r ref
	if i := strings.IndexByte(s, '@'); i >= 0 {
		s, r.digest = s[:i], s[i+1:]
	}
	if i := strings.LastIndexByte(s, ':'); i > strings.LastIndexByte(s, '/') {
		s, r.tag = s[:i], s[i+1:]
	}
	r.host, r.path, _ = strings.Cut(s, "/")
	return r
}
