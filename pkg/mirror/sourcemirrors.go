package mirror

import (
	"fmt"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
)

// sourceRef parses a pair's source and, when spec.sourceMirrors names its
// registry, points it at the mirror: the same repository path below the
// mirror's prefix, the same tag or digest.
func (r *runner) sourceRef(source string) (name.Reference, error) {
	src, err := name.ParseReference(source)
	if err != nil {
		return nil, err
	}
	m, ok := r.mirrorFor(src.Context().RegistryStr())
	if !ok {
		return src, nil
	}
	s := strings.TrimSuffix(m.Mirror, "/") + "/" + src.Context().RepositoryStr()
	if d, ok := src.(name.Digest); ok {
		s += "@" + d.DigestStr()
	} else {
		s += ":" + src.Identifier()
	}
	var opts []name.Option
	if m.Insecure {
		opts = append(opts, name.Insecure)
	}
	ref, err := name.ParseReference(s, opts...)
	if err != nil {
		return nil, fmt.Errorf("source mirror %s for %s: %w", m.Mirror, m.Host, err)
	}
	return ref, nil
}

// mirrorFor returns the source mirror of registry reg (as name parses it:
// Docker Hub is index.docker.io).
func (r *runner) mirrorFor(reg string) (SourceMirror, bool) {
	for _, m := range r.o.sources {
		h := m.Host
		if h == "docker.io" || h == "registry-1.docker.io" {
			h = name.DefaultRegistry
		}
		if h == reg {
			return m, true
		}
	}
	return SourceMirror{}, false
}

// via says where a source was read from when a source mirror served it.
func (r *runner) via(src name.Reference) string {
	if src.Context().RegistryStr() == layoutHost {
		return " (read from the OCI layout)"
	}
	for _, m := range r.o.sources {
		if strings.HasPrefix(src.Context().String(), strings.TrimSuffix(m.Mirror, "/")+"/") {
			return " (read from source mirror " + src.Context().RegistryStr() + ")"
		}
	}
	return ""
}

// SourceMirror reads the images of the source registry Host from Mirror
// (HOST[:PORT][/PREFIX]): the same repository paths below it. Pairs, lock
// entries and messages keep naming Host.
type SourceMirror struct {
	Host, Mirror string
	// Insecure talks plain HTTP to Mirror.
	Insecure bool
}

// WithSourceMirrors reads each source registry named in ms from its mirror
// (spec.sourceMirrors). Host docker.io also covers index.docker.io.
func WithSourceMirrors(ms []SourceMirror) Option {
	return func(o *options) error { o.sources = append([]SourceMirror(nil), ms...); return nil }
}
