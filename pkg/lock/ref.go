package lock

import (
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
)

// Normalize returns the canonical form of an image or chart reference, as the
// lock keys it: a full registry host (docker.io for Docker Hub, never
// index.docker.io), library/ for Docker Hub short names, and the tag (latest
// when none) and/or digest kept. An oci:// prefix (Helm charts) is dropped.
func Normalize(ref string) (string, error) {
	ref = strings.TrimPrefix(ref, "oci://")
	r, err := name.ParseReference(ref, name.StrictValidation)
	if err != nil {
		r, err = name.ParseReference(ref)
		if err != nil {
			return "", err
		}
	}
	repo := r.Context()
	host := repo.RegistryStr()
	if host == name.DefaultRegistry {
		host = "docker.io"
	}
	out := host + "/" + repo.RepositoryStr()
	switch t := r.(type) {
	case name.Tag:
		out += ":" + t.TagStr()
	case name.Digest:
		if _, tag := SplitRef(ref); tag != "" {
			out += ":" + tag
		}
		out += "@" + t.DigestStr()
	}
	return out, nil
}

// SplitRef splits a reference as written (name[:tag][@digest]) into its name,
// without tag or digest, and its tag ("" when none). A colon before the last
// slash belongs to a registry port, not a tag.
func SplitRef(ref string) (name, tag string) {
	if i := strings.IndexByte(ref, '@'); i >= 0 {
		ref = ref[:i]
	}
	for i := len(ref) - 1; i >= 0; i-- {
		switch ref[i] {
		case ':':
			return ref[:i], ref[i+1:]
		case '/':
			return ref, ""
		}
	}
	return ref, ""
}
