package schema

import (
	"net/url"
	"path"
	"strings"

	"fleetgen.dev/fleetgen/pkg/problem"
)

func (v *validator) source() {
	s := &v.f.Spec.Source
	switch s.Kind {
	case SourceGit:
		v.gitURL(s.URL)
	case SourceOCI:
		if s.URL == "" {
			v.add(problem.Required("spec.source.url", "source url is required: want oci://HOST/REPOSITORY"))
		} else if u, err := url.Parse(s.URL); err != nil || u.Scheme != "oci" || u.Host == "" || strings.Trim(u.Path, "/") == "" {
			v.add(problem.InvalidValue("spec.source.url", "invalid OCI URL %q: want oci://HOST/REPOSITORY", s.URL))
		}
	case "":
		v.add(problem.Required("spec.source.kind", "source kind is required: want git or oci"))
	default:
		v.add(problem.NotSupported("spec.source.kind", "unsupported value %q: want git or oci", s.Kind))
	}
	if s.Insecure && s.Kind != SourceOCI {
		v.add(problem.NotApplicable("spec.source.insecure", "insecure applies only to kind oci (a plain HTTP registry): for git, use an http:// URL"))
	}
	if s.Ref == "" {
		v.add(problem.Required("spec.source.ref", "source ref is required: want a branch (git) or tag (oci)"))
	}
	v.subdomain("spec.source.secretRef", "secret name", s.SecretRef)
	v.duration("spec.source.interval", s.Interval)
	if s.Path != "" {
		if why := relPath(s.Path); why != "" {
			v.add(problem.InvalidValue("spec.source.path", "invalid path %q: %s", s.Path, why))
		}
	}
}

func (v *validator) gitURL(raw string) {
	const want = "want https://, http:// or ssh:// (e.g. ssh://git@github.com/org/repo.git)"
	if raw == "" {
		v.add(problem.Required("spec.source.url", "source url is required: %s", want))
		return
	}
	if !strings.Contains(raw, "://") {
		if m := scpLikeRE.FindStringSubmatch(raw); m != nil {
			user := ""
			if m[1] != "" {
				user = m[1] + "@"
			}
			v.add(problem.Other("spec.source.url", "scp-style Git URL %q is not accepted by Flux: want ssh://%s%s/%s", raw, user, m[2], strings.TrimPrefix(m[3], "/")))
			return
		}
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http" && u.Scheme != "ssh") {
		v.add(problem.InvalidValue("spec.source.url", "invalid Git URL %q: %s", raw, want))
	}
}

// relPath reports why p is not a relative path inside the source root.
func relPath(p string) string {
	if path.IsAbs(p) || strings.HasPrefix(p, `\`) || (len(p) > 1 && p[1] == ':') {
		return "want a path relative to the folder of fleet.yaml"
	}
	c := path.Clean(p)
	if c == ".." || strings.HasPrefix(c, "../") {
		return "it leaves the folder of fleet.yaml: want a path inside it"
	}
	return ""
}
