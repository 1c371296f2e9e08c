package mirror

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// An OCI image layout (image-spec's layout: oci-layout, index.json,
// blobs/sha256/<hex>) is a folder, or a tar of one when its path ends in
// .tar, as `oras backup` writes either. fleetgen reads a layout by digest
// only (what the lock names): index.json is written for people and other
// tools, and read by none of fleetgen's code.

// LayoutRefName is the annotation of index.json that names an image
// (org.opencontainers.image.ref.name): fleetgen writes each image's
// normalised source reference.
const LayoutRefName = "org.opencontainers.image.ref.name"

// IsTar reports whether a layout path names a tar (it ends in .tar).
func IsTar(path string) bool { return strings.HasSuffix(path, ".tar") }

// blobName is the only file name a layout's blobs may have.
var blobName = regexp.MustCompile(`^blobs/sha256/[0-9a-f]{64}$`)

// maxIndexJSON bounds a layout's index.json.
const maxIndexJSON = 16 << 20

// layoutFiles reads a layout: a folder (confined with os.Root) or a tar,
// whose members are indexed once and read in place. Only oci-layout,
// index.json and blobs/sha256/<hex> are read; a tar that holds anything
// else (a link, a path outside the layout, a duplicate) is refused.
type layoutFiles struct {
	root *os.Root // a folder
	tar  *os.File // a tar: members at their offsets
	at   map[string]tarMember
}

type tarMember struct{ off, size int64 }

// openLayout opens the layout at path (a folder, or a tar when it ends in
// .tar). It must hold an oci-layout file.
func openLayout(path string) (*layoutFiles, error) {
	var lf *layoutFiles
	if IsTar(path) {
		f, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		lf = &layoutFiles{tar: f, at: map[string]tarMember{}}
		if err := lf.index(); err != nil {
			f.Close()
			return nil, fmt.Errorf("%s: %w", path, err)
		}
	} else {
		r, err := os.OpenRoot(path)
		if err != nil {
			return nil, err
		}
		lf = &layoutFiles{root: r}
	}
	rc, _, err := lf.open(ocilayoutFile)
	if err != nil {
		lf.Close()
		return nil, fmt.Errorf("%s is not an OCI image layout (no %s file): %w", path, ocilayoutFile, err)
	}
	rc.Close()
	return lf, nil
}

const ocilayoutFile = "oci-layout"

// index reads the tar's headers and notes where each member's bytes are.
func (lf *layoutFiles) index() error {
	cr := &offsetReader{f: lf.tar}
	tr := tar.NewReader(cr)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("not a tar: %w", err)
		}
		name := strings.TrimPrefix(h.Name, "./")
		switch {
		case h.Typeflag == tar.TypeDir && (name == "blobs/" || name == "blobs/sha256/" || name == "blobs" || name == "blobs/sha256" || name == "" || name == "."):
			continue
		case h.Typeflag != tar.TypeReg:
			return fmt.Errorf("member %q is not a regular file: want an OCI image layout (oci-layout, index.json, blobs/sha256/<hex>)", name)
		case name != ocilayoutFile && name != "index.json" && !blobName.MatchString(name):
			return fmt.Errorf("member %q is not part of an OCI image layout: want oci-layout, index.json and blobs/sha256/<hex> only", name)
		}
		if _, dup := lf.at[name]; dup {
			return fmt.Errorf("member %q is there twice", name)
		}
		lf.at[name] = tarMember{off: cr.off, size: h.Size}
	}
}

// offsetReader reads a file and knows where it is: a tar member's data
// starts where the reader is after its header. It seeks, so that the tar
// reader skips the members' data instead of reading it.
type offsetReader struct {
	f   *os.File
	off int64
}

func (r *offsetReader) Read(p []byte) (int, error) {
	n, err := r.f.Read(p)
	r.off += int64(n)
	return n, err
}

func (r *offsetReader) Seek(offset int64, whence int) (int64, error) {
	n, err := r.f.Seek(offset, whence)
	if err == nil {
		r.off = n
	}
	return n, err
}

// open opens one file of the layout and returns its size.
func (lf *layoutFiles) open(name string) (io.ReadCloser, int64, error) {
	if lf.root != nil {
		f, err := lf.root.Open(name)
		if err != nil {
			return nil, 0, err
		}
		fi, err := f.Stat()
		if err != nil || !fi.Mode().IsRegular() {
			f.Close()
			return nil, 0, fmt.Errorf("%s: not a regular file: %w", name, fs.ErrNotExist)
		}
		return f, fi.Size(), nil
	}
	m, ok := lf.at[name]
	if !ok {
		return nil, 0, fmt.Errorf("%s: %w", name, fs.ErrNotExist)
	}
	return io.NopCloser(io.NewSectionReader(lf.tar, m.off, m.size)), m.size, nil
}

// blob opens the blob of digest d.
func (lf *layoutFiles) blob(d v1.Hash) (io.ReadCloser, int64, error) {
	if d.Algorithm != "sha256" || len(d.Hex) != 64 {
		return nil, 0, fmt.Errorf("%s: %w", d, fs.ErrNotExist)
	}
	return lf.open("blobs/sha256/" + d.Hex)
}

// readBlob reads a blob of at most max bytes whole and checks its digest.
func (lf *layoutFiles) readBlob(d v1.Hash, max int64) ([]byte, error) {
	rc, size, err := lf.blob(d)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	if size > max {
		return nil, fmt.Errorf("blob %s: %d bytes, more than %d", d, size, max)
	}
	data, err := io.ReadAll(io.LimitReader(rc, max+1))
	if err != nil {
		return nil, err
	}
	if got, _, _ := v1.SHA256(bytes.NewReader(data)); got != d {
		return nil, fmt.Errorf("blob %s: %w: its bytes hash to %s", d, ErrDigestMismatch, got)
	}
	return data, nil
}

func (lf *layoutFiles) Close() error {
	if lf.root != nil {
		return lf.root.Close()
	}
	return lf.tar.Close()
}

// layoutIndex writes index.json for descs, sorted by ref.name then digest,
// and the oci-layout file, into dir.
func writeLayoutIndex(dir string, descs []v1.Descriptor) error {
	sort.Slice(descs, func(i, j int) bool {
		a, b := descs[i].Annotations[LayoutRefName], descs[j].Annotations[LayoutRefName]
		if a != b {
			return a < b
		}
		return descs[i].Digest.String() < descs[j].Digest.String()
	})
	idx := v1.IndexManifest{SchemaVersion: 2, MediaType: types.OCIImageIndex, Manifests: descs}
	data, err := json.Marshal(idx)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "index.json"), data, 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, ocilayoutFile), []byte(`{"imageLayoutVersion":"1.0.0"}`), 0o644)
}

// tarLayout writes the layout folder dir as a tar to w: oci-layout,
// index.json, then the blobs in digest order, with fixed times and owners,
// so that one layout gives one tar, byte for byte.
func tarLayout(w io.Writer, dir string) error {
	tw := tar.NewWriter(w)
	add := func(name string, mode int64, typ byte, size int64, body io.Reader) error {
		h := &tar.Header{Name: name, Mode: mode, Typeflag: typ, Size: size, ModTime: time.Unix(0, 0), Format: tar.FormatPAX}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if body != nil {
			if _, err := io.Copy(tw, body); err != nil {
				return err
			}
		}
		return nil
	}
	for _, name := range []string{ocilayoutFile, "index.json"} {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return err
		}
		if err := add(name, 0o644, tar.TypeReg, int64(len(data)), bytes.NewReader(data)); err != nil {
			return err
		}
	}
	if err := add("blobs/", 0o755, tar.TypeDir, 0, nil); err != nil {
		return err
	}
	if err := add("blobs/sha256/", 0o755, tar.TypeDir, 0, nil); err != nil {
		return err
	}
	entries, err := os.ReadDir(filepath.Join(dir, "blobs", "sha256"))
	if err != nil {
		return err
	}
	for _, e := range entries { // ReadDir sorts by name
		f, err := os.Open(filepath.Join(dir, "blobs", "sha256", e.Name()))
		if err != nil {
			return err
		}
		fi, err := f.Stat()
		if err == nil {
			err = add("blobs/sha256/"+e.Name(), 0o644, tar.TypeReg, fi.Size(), f)
		}
		f.Close()
		if err != nil {
			return err
		}
	}
	return tw.Close()
}
