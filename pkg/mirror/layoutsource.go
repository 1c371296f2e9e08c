package mirror

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"fleetgen.dev/fleetgen/internal/inert"
	"fleetgen.dev/fleetgen/pkg/lock"
)

// layoutSource is the registry API, read only, over a layout, for the
// copier to read the locked images from: exactly what the lock names (each
// image's manifests and every referrer it lists, by digest; the cosign tags
// it lists), whatever else the layout holds. Repositories are s<N>/<path>,
// N the index of the source registry in hosts.
type layoutSource struct {
	lf        *layoutFiles
	hosts     []string
	manifests map[v1.Hash]storedManifest
	referrers map[v1.Hash][]v1.Descriptor // subject -> the lock's referrers of it
	tags      map[string]v1.Hash          // source repo:tag -> digest
}

// newLayoutSource reads every manifest the lock entries name from lf, and
// fails listing each one the layout lacks (or whose bytes are not its
// digest's).
func newLayoutSource(lf *layoutFiles, images []lock.Image, hosts []string) (*layoutSource, error) {
	s := &layoutSource{lf: lf, hosts: hosts, manifests: map[v1.Hash]storedManifest{}, referrers: map[v1.Hash][]v1.Descriptor{}, tags: map[string]v1.Hash{}}
	var missing []string
	for _, img := range images {
		d, err := v1.NewHash(img.Digest)
		if err != nil {
			return nil, fmt.Errorf("lock entry %s: %w", inert.Quote(img.Source), err)
		}
		if err := s.walk(d, 0); err != nil {
			missing = append(missing, fmt.Sprintf("%s@%s: %v", inert.Quote(img.Source), d, err))
			continue
		}
		repo, _ := lock.SplitRef(img.Source)
		for _, r := range img.Referrers {
			rd, err := v1.NewHash(r.Digest)
			if err != nil {
				return nil, fmt.Errorf("lock entry %s: referrer: %w", inert.Quote(img.Source), err)
			}
			if err := s.walk(rd, 0); err != nil {
				missing = append(missing, fmt.Sprintf("%s: referrer %s (%s): %v", inert.Quote(img.Source), rd, inert.Quote(r.ArtifactType), err))
				continue
			}
			if r.Tag != "" {
				s.tags[repo+":"+r.Tag] = rd
			}
			m := s.manifests[rd]
			var parsed struct {
				ArtifactType string         `json:"artifactType"`
				Config       v1.Descriptor  `json:"config"`
				Subject      *v1.Descriptor `json:"subject"`
			}
			if json.Unmarshal(m.raw, &parsed) != nil || parsed.Subject == nil {
				continue // cosign's legacy tags have no subject
			}
			// The referrers API's artifactType: the manifest's, else its
			// config's media type (the distribution spec's rule).
			at := parsed.ArtifactType
			if at == "" {
				at = string(parsed.Config.MediaType)
			}
			desc := v1.Descriptor{MediaType: m.mt, Digest: rd, Size: int64(len(m.raw)), ArtifactType: at}
			if !slices.ContainsFunc(s.referrers[parsed.Subject.Digest], func(o v1.Descriptor) bool { return o.Digest == rd }) {
				s.referrers[parsed.Subject.Digest] = append(s.referrers[parsed.Subject.Digest], desc)
			}
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		return nil, &LayoutError{Missing: missing}
	}
	return s, nil
}

// LayoutError lists what the lock names that a layout lacks.
type LayoutError struct {
	Missing []string
}

func (e *LayoutError) Error() string {
	return fmt.Sprintf("the layout lacks %d manifest(s) the lock names (write it again with `fleetgen mirror --to`):\n  %s", len(e.Missing), strings.Join(e.Missing, "\n  "))
}

// walk reads manifest d and, for an index, its children.
func (s *layoutSource) walk(d v1.Hash, depth int) error {
	if _, ok := s.manifests[d]; ok {
		return nil
	}
	raw, err := s.lf.readBlob(d, MaxManifestBytes)
	if err != nil {
		return err
	}
	var head struct {
		MediaType types.MediaType `json:"mediaType"`
		Manifests json.RawMessage `json:"manifests"`
	}
	if err := json.Unmarshal(raw, &head); err != nil {
		return fmt.Errorf("manifest %s is not JSON", d)
	}
	mt := head.MediaType
	if mt == "" {
		mt = types.OCIManifestSchema1
		if head.Manifests != nil {
			mt = types.OCIImageIndex
		}
	}
	s.manifests[d] = storedManifest{mt: mt, raw: raw}
	if !mt.IsIndex() {
		return nil
	}
	if depth == MaxIndexDepth {
		return fmt.Errorf("index %s nested more than %d deep", d, MaxIndexDepth)
	}
	idx, err := parseIndex(layoutHost, d, raw)
	if err != nil {
		return err
	}
	for _, c := range idx.Manifests {
		if err := s.walk(c.Digest, depth+1); err != nil {
			return err
		}
	}
	return nil
}

// sourceRepo is the source repository of a layout repository s<N>/<path>.
func (s *layoutSource) sourceRepo(repo string) string {
	first, path, _ := strings.Cut(repo, "/")
	if n, err := strconv.Atoi(strings.TrimPrefix(first, "s")); err == nil && n >= 0 && n < len(s.hosts) {
		return s.hosts[n] + "/" + path
	}
	return ""
}

func (s *layoutSource) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		registryError(w, http.StatusMethodNotAllowed, "UNSUPPORTED", "a layout is read only")
		return
	}
	if r.URL.Path == "/v2/" || r.URL.Path == "/v2" {
		w.WriteHeader(http.StatusOK)
		return
	}
	repo, kind, rest, ok := route(r.URL.Path)
	if !ok {
		registryError(w, http.StatusNotFound, "NAME_UNKNOWN", "not found")
		return
	}
	switch kind {
	case "manifests":
		d, err := v1.NewHash(rest)
		if err != nil {
			d = s.tags[s.sourceRepo(repo)+":"+rest]
		}
		m, ok := s.manifests[d]
		if !ok {
			registryError(w, http.StatusNotFound, "MANIFEST_UNKNOWN", "not a manifest the lock names")
			return
		}
		serve(w, r, m.mt, d, m.raw)
	case "blobs":
		d, err := v1.NewHash(rest)
		if err != nil {
			registryError(w, http.StatusNotFound, "BLOB_UNKNOWN", "blob unknown")
			return
		}
		rc, size, err := s.lf.blob(d)
		if err != nil {
			registryError(w, http.StatusNotFound, "BLOB_UNKNOWN", "blob unknown")
			return
		}
		defer rc.Close()
		w.Header().Set("Content-Length", strconv.FormatInt(size, 10))
		w.Header().Set("Docker-Content-Digest", d.String())
		w.WriteHeader(http.StatusOK)
		if r.Method == http.MethodGet {
			io.Copy(w, rc) // the copier checks the digest as it reads
		}
	case "referrers":
		d, err := v1.NewHash(rest)
		if err != nil {
			registryError(w, http.StatusNotFound, "MANIFEST_UNKNOWN", "not a digest")
			return
		}
		idx := v1.IndexManifest{SchemaVersion: 2, MediaType: types.OCIImageIndex, Manifests: s.referrers[d]}
		if idx.Manifests == nil {
			idx.Manifests = []v1.Descriptor{}
		}
		raw, _ := json.Marshal(idx)
		w.Header().Set("Content-Type", string(types.OCIImageIndex))
		w.Header().Set("Content-Length", strconv.Itoa(len(raw)))
		w.WriteHeader(http.StatusOK)
		w.Write(raw)
	case "tags/list":
		prefix := s.sourceRepo(repo) + ":"
		tags := []string{}
		for k := range s.tags {
			if t, ok := strings.CutPrefix(k, prefix); ok {
				tags = append(tags, t)
			}
		}
		sort.Strings(tags)
		raw, _ := json.Marshal(map[string]any{"name": repo, "tags": tags})
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		w.Write(raw)
	default:
		registryError(w, http.StatusNotFound, "UNSUPPORTED", "not served by a layout")
	}
}

// serve answers a manifest request.
func serve(w http.ResponseWriter, r *http.Request, mt types.MediaType, d v1.Hash, raw []byte) {
	w.Header().Set("Content-Type", string(mt))
	w.Header().Set("Docker-Content-Digest", d.String())
	w.Header().Set("Content-Length", strconv.Itoa(len(raw)))
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodGet {
		io.Copy(w, bytes.NewReader(raw))
	}
}
