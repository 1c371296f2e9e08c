package mirror

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// layoutSink is the registry API, enough of it for the copier to push to,
// over a layout folder being written: blobs stream to blobs/sha256/<hex>
// (checked against their digest), manifests go there too and are kept,
// with their tags, to answer the copier's lookups. Every repository is one
// store: the layout is content-addressed.
type layoutSink struct {
	dir string

	mu        sync.Mutex
	manifests map[v1.Hash]storedManifest
	tags      map[string]v1.Hash // repo:tag
	uploads   map[string]*upload
	next      int
}

type storedManifest struct {
	mt  types.MediaType
	raw []byte
}

type upload struct {
	f *os.File
	h hash.Hash
	n int64
}

func newLayoutSink(dir string) (*layoutSink, error) {
	for _, d := range []string{filepath.Join(dir, "blobs", "sha256"), filepath.Join(dir, ".uploads")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
	}
	return &layoutSink{dir: dir, manifests: map[v1.Hash]storedManifest{}, tags: map[string]v1.Hash{}, uploads: map[string]*upload{}}, nil
}

// route splits /v2/<repo>/<kind>/<rest> (kind blobs, manifests, referrers,
// tags); ok is false for another path.
func route(p string) (repo, kind, rest string, ok bool) {
	p = strings.TrimPrefix(p, "/v2/")
	for _, k := range []string{"/blobs/uploads/", "/blobs/uploads", "/blobs/", "/manifests/", "/referrers/", "/tags/list"} {
		if i := strings.LastIndex(p, k); i > 0 {
			return p[:i], strings.Trim(k, "/"), p[i+len(k):], true
		}
	}
	return "", "", "", false
}

func registryError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]any{"errors": []map[string]string{{"code": code, "message": msg}}})
}

func (s *layoutSink) blobPath(d v1.Hash) string {
	return filepath.Join(s.dir, "blobs", "sha256", d.Hex)
}

func (s *layoutSink) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/v2/" || r.URL.Path == "/v2" {
		w.WriteHeader(http.StatusOK)
		return
	}
	repo, kind, rest, ok := route(r.URL.Path)
	if !ok {
		registryError(w, http.StatusNotFound, "NAME_UNKNOWN", "not found")
		return
	}
	switch {
	case kind == "blobs/uploads" && r.Method == http.MethodPost:
		s.startUpload(w, r, repo)
	case kind == "blobs/uploads" && (r.Method == http.MethodPatch || r.Method == http.MethodPut):
		s.writeUpload(w, r, repo, rest)
	case kind == "blobs" && (r.Method == http.MethodHead || r.Method == http.MethodGet):
		d, err := v1.NewHash(rest)
		fi, serr := os.Stat(s.blobPath(d))
		if err != nil || d.Algorithm != "sha256" || serr != nil {
			registryError(w, http.StatusNotFound, "BLOB_UNKNOWN", "blob unknown")
			return
		}
		w.Header().Set("Content-Length", strconv.FormatInt(fi.Size(), 10))
		w.Header().Set("Docker-Content-Digest", d.String())
		if r.Method == http.MethodHead {
			w.WriteHeader(http.StatusOK)
			return
		}
		f, err := os.Open(s.blobPath(d))
		if err != nil {
			registryError(w, http.StatusNotFound, "BLOB_UNKNOWN", "blob unknown")
			return
		}
		defer f.Close()
		w.WriteHeader(http.StatusOK)
		io.Copy(w, f)
	case kind == "manifests" && r.Method == http.MethodPut:
		s.putManifest(w, r, repo, rest)
	case kind == "manifests" && (r.Method == http.MethodHead || r.Method == http.MethodGet):
		s.mu.Lock()
		d, err := v1.NewHash(rest)
		if err != nil {
			d = s.tags[repo+":"+rest]
		}
		m, ok := s.manifests[d]
		s.mu.Unlock()
		if !ok {
			registryError(w, http.StatusNotFound, "MANIFEST_UNKNOWN", "manifest unknown")
			return
		}
		w.Header().Set("Content-Type", string(m.mt))
		w.Header().Set("Docker-Content-Digest", d.String())
		w.Header().Set("Content-Length", strconv.Itoa(len(m.raw)))
		w.WriteHeader(http.StatusOK)
		if r.Method == http.MethodGet {
			w.Write(m.raw)
		}
	default:
		registryError(w, http.StatusNotFound, "UNSUPPORTED", "not served by a layout")
	}
}

func (s *layoutSink) startUpload(w http.ResponseWriter, r *http.Request, repo string) {
	if m := r.URL.Query().Get("mount"); m != "" {
		if d, err := v1.NewHash(m); err == nil && d.Algorithm == "sha256" {
			if _, err := os.Stat(s.blobPath(d)); err == nil {
				w.Header().Set("Location", "/v2/"+repo+"/blobs/"+d.String())
				w.Header().Set("Docker-Content-Digest", d.String())
				w.WriteHeader(http.StatusCreated)
				return
			}
		}
	}
	f, err := os.CreateTemp(filepath.Join(s.dir, ".uploads"), "blob-")
	if err != nil {
		registryError(w, http.StatusInternalServerError, "UNKNOWN", err.Error())
		return
	}
	s.mu.Lock()
	s.next++
	id := strconv.Itoa(s.next)
	s.uploads[id] = &upload{f: f, h: sha256.New()}
	s.mu.Unlock()
	w.Header().Set("Location", "/v2/"+repo+"/blobs/uploads/"+id)
	w.Header().Set("Range", "0-0")
	w.WriteHeader(http.StatusAccepted)
}

func (s *layoutSink) writeUpload(w http.ResponseWriter, r *http.Request, repo, id string) {
	s.mu.Lock()
	u, ok := s.uploads[id]
	s.mu.Unlock()
	if !ok {
		registryError(w, http.StatusNotFound, "BLOB_UPLOAD_UNKNOWN", "upload unknown")
		return
	}
	n, err := io.Copy(io.MultiWriter(u.f, u.h), r.Body)
	u.n += n
	if err != nil {
		registryError(w, http.StatusInternalServerError, "UNKNOWN", err.Error())
		return
	}
	if r.Method == http.MethodPatch {
		w.Header().Set("Location", "/v2/"+repo+"/blobs/uploads/"+id)
		w.Header().Set("Range", fmt.Sprintf("0-%d", max(u.n-1, 0)))
		w.WriteHeader(http.StatusAccepted)
		return
	}
	s.mu.Lock()
	delete(s.uploads, id)
	s.mu.Unlock()
	name := u.f.Name()
	if err := u.f.Close(); err != nil {
		os.Remove(name)
		registryError(w, http.StatusInternalServerError, "UNKNOWN", err.Error())
		return
	}
	d, err := v1.NewHash(r.URL.Query().Get("digest"))
	if err != nil || d.Algorithm != "sha256" || d.Hex != hex.EncodeToString(u.h.Sum(nil)) {
		os.Remove(name)
		registryError(w, http.StatusBadRequest, "DIGEST_INVALID", "the content does not match the digest")
		return
	}
	if err := os.Rename(name, s.blobPath(d)); err != nil {
		os.Remove(name)
		registryError(w, http.StatusInternalServerError, "UNKNOWN", err.Error())
		return
	}
	w.Header().Set("Location", "/v2/"+repo+"/blobs/"+d.String())
	w.Header().Set("Docker-Content-Digest", d.String())
	w.WriteHeader(http.StatusCreated)
}

func (s *layoutSink) putManifest(w http.ResponseWriter, r *http.Request, repo, ref string) {
	raw, err := io.ReadAll(io.LimitReader(r.Body, MaxManifestBytes+1))
	if err != nil || len(raw) > MaxManifestBytes {
		registryError(w, http.StatusBadRequest, "MANIFEST_INVALID", "manifest unreadable or too large")
		return
	}
	d, _, _ := v1.SHA256(bytes.NewReader(raw))
	if want, err := v1.NewHash(ref); err == nil && want != d {
		registryError(w, http.StatusBadRequest, "DIGEST_INVALID", "the manifest does not match the digest")
		return
	}
	if err := os.WriteFile(s.blobPath(d), raw, 0o644); err != nil {
		registryError(w, http.StatusInternalServerError, "UNKNOWN", err.Error())
		return
	}
	s.mu.Lock()
	s.manifests[d] = storedManifest{mt: types.MediaType(r.Header.Get("Content-Type")), raw: raw}
	if _, err := v1.NewHash(ref); err != nil {
		s.tags[repo+":"+ref] = d
	}
	s.mu.Unlock()
	// A registry with the referrers API says so (OCI-Subject), which keeps
	// the copier from writing a referrers tag index: the layout finds
	// referrers by their subject.
	var m struct {
		Subject *v1.Descriptor `json:"subject"`
	}
	if json.Unmarshal(raw, &m) == nil && m.Subject != nil {
		w.Header().Set("OCI-Subject", m.Subject.Digest.String())
	}
	w.Header().Set("Location", "/v2/"+repo+"/manifests/"+d.String())
	w.Header().Set("Docker-Content-Digest", d.String())
	w.WriteHeader(http.StatusCreated)
}

// manifest returns a manifest the copier pushed.
func (s *layoutSink) manifest(d v1.Hash) (storedManifest, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m, ok := s.manifests[d]
	return m, ok
}

// close ends the writing: unfinished uploads go.
func (s *layoutSink) close() error {
	s.mu.Lock()
	for _, u := range s.uploads {
		u.f.Close()
	}
	s.uploads = nil
	s.mu.Unlock()
	return os.RemoveAll(filepath.Join(s.dir, ".uploads"))
}
