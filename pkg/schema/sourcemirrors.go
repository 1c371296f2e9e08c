package schema

import (
	"strconv"
	"strings"

	"fleetgen.dev/fleetgen/pkg/problem"
)

// SourceMirror reads one source registry's images from another host (a
// pull-through cache, an air-gapped staging registry): the same repository
// paths below Mirror's prefix. References, the lock's source and the target
// names stay those of Host, so switching the pull path changes no output.
type SourceMirror struct {
	// Host is the source registry, HOST[:PORT] as images name it; docker.io
	// also covers index.docker.io and short names.
	Host string `json:"host"`
	// Mirror is HOST[:PORT][/PREFIX] to read Host's repositories from.
	Mirror string `json:"mirror"`
	// Insecure talks plain HTTP to Mirror (local registries only).
	Insecure bool `json:"insecure,omitempty"`
}

func init() {
	fieldDocs["spec.sourceMirrors"] = fieldDoc{desc: "Where to pull a source registry's images from instead of the registry itself; references, the lock and target names stay those of the source.", example: []any{map[string]any{"host": "docker.io", "mirror": "proxy.contoso.example/dockerhub"}}}
	fieldDocs["spec.sourceMirrors[].host"] = fieldDoc{desc: "The source registry, HOST[:PORT] as image references name it, e.g. docker.io (which also covers index.docker.io) or ghcr.io.", required: true, example: "docker.io"}
	fieldDocs["spec.sourceMirrors[].mirror"] = fieldDoc{desc: "HOST[:PORT][/PREFIX] whose repositories hold the source's under the same paths, e.g. proxy.contoso.example/dockerhub.", required: true, example: "proxy.contoso.example/dockerhub"}
	fieldDocs["spec.sourceMirrors[].insecure"] = fieldDoc{desc: "Talk plain HTTP to the mirror (local registries only).", def: false}
}

// CanonicalRegistry is the registry name a source host stands for: Docker
// Hub's docker.io and index.docker.io are one registry.
func CanonicalRegistry(host string) string {
	if host == "index.docker.io" || host == "registry-1.docker.io" {
		return "docker.io"
	}
	return host
}

// sourceMirrors checks spec.sourceMirrors: each host a HOST[:PORT], each
// mirror a HOST[:PORT][/PREFIX] without scheme, no host twice.
func (v *validator) sourceMirrors() {
	seen := map[string]int{}
	for i, m := range v.f.Spec.SourceMirrors {
		path := "spec.sourceMirrors[" + strconv.Itoa(i) + "]"
		switch why := hostPort(m.Host); {
		case m.Host == "":
			v.add(problem.Required(path+".host", "host is required: want the source registry as images name it, e.g. docker.io or ghcr.io"))
		case why != "":
			v.add(problem.InvalidValue(path+".host", "invalid source registry host %q: %s", m.Host, why))
		default:
			key := CanonicalRegistry(m.Host)
			if j, dup := seen[key]; dup {
				v.add(problem.Duplicate(path+".host", "duplicate source registry %q (also spec.sourceMirrors[%d]): want one mirror per source registry", m.Host, j))
			} else {
				seen[key] = i
			}
		}
		if m.Mirror == "" {
			v.add(problem.Required(path+".mirror", "mirror is required: want HOST[:PORT][/PREFIX] of the registry to read from, e.g. proxy.contoso.example/dockerhub"))
			continue
		}
		if why := mirrorRef(m.Mirror); why != "" {
			v.add(problem.InvalidValue(path+".mirror", "invalid mirror %q: %s", m.Mirror, why))
		}
	}
}

// mirrorRef reports why s is not HOST[:PORT][/PREFIX] ("" if it is).
func mirrorRef(s string) string {
	const want = "want HOST[:PORT][/PREFIX] without scheme, e.g. proxy.contoso.example/dockerhub or localhost:5000"
	if strings.Contains(s, "://") {
		return "a scheme: " + want + " (set insecure: true for plain HTTP)"
	}
	host, prefix, _ := strings.Cut(s, "/")
	if why := hostPort(host); why != "" {
		return want
	}
	if prefix == "" {
		if strings.HasSuffix(s, "/") {
			return "a trailing '/': " + want
		}
		return ""
	}
	for _, p := range strings.Split(prefix, "/") {
		if !repoPathRE.MatchString(p) {
			return "invalid prefix: " + want + ", the prefix in lower case path components"
		}
	}
	return ""
}
