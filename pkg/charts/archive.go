// Package charts renders Helm charts offline, as the helm-controller of Flux
// 2.9 (v1.6.4, Helm SDK helm.sh/helm/v4 v4.2.4) renders them in a cluster,
// so that fleetgen can mirror, pin and guard every image and Secret a
// HelmRelease deploys.
//
// A chart archive is untrusted input, like a layer folder: Load bounds its
// size, decompressed size, file count, path depth and subchart nesting, and
// refuses links, devices and paths that leave the archive. Render uses Helm's
// own loader and engine, with no Kubernetes client (lookup finds nothing), no
// DNS and no network (a values schema that refers outside the chart is left
// out), deterministic stand-ins for Sprig's random and clock functions, and
// bounded time and output. The sources (OCI by digest, HTTP chart
// repositories, the content-addressed cache) and the republishing of a chart
// as an OCI artifact are in this package too; it links no Kubernetes client
// code path of Helm (action, kube) and no controller-runtime.
package charts

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"path"
	"regexp"
	"sort"
	"strings"
	"time"

	"helm.sh/helm/v4/pkg/chart/loader/archive"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"

	"fleetgen.dev/fleetgen/internal/inert"
)

// Limits bounds what a chart may cost. The defaults (DefaultLimits) admit
// the largest public charts (kube-prometheus-stack: about 1 MiB packed, 10
// MiB of templates and CRDs) several times over.
type Limits struct {
	// ArchiveBytes bounds the packed .tgz, and a subchart archive inside it.
	ArchiveBytes int64
	// DecompressedBytes bounds the unpacked files of the chart, subchart
	// archives included, all together.
	DecompressedBytes int64
	// FileBytes bounds one unpacked file (Helm's own bound is 5 MiB).
	FileBytes int64
	// Files bounds the number of files, subchart archives' included.
	Files int
	// PathDepth bounds the folders of one file's path inside the chart.
	PathDepth int
	// Nesting bounds subchart archives inside subchart archives.
	Nesting int
	// OutputBytes bounds what one render produces: the rendered manifests.
	OutputBytes int64
	// RenderTime bounds one render's wall time.
	RenderTime time.Duration
}

// DefaultLimits returns the bounds fleetgen uses.
func DefaultLimits() Limits {
	return Limits{
		ArchiveBytes:      20 << 20,
		DecompressedBytes: 64 << 20,
		FileBytes:         5 << 20,
		Files:             5000,
		PathDepth:         16,
		Nesting:           4,
		OutputBytes:       32 << 20,
		RenderTime:        30 * time.Second,
	}
}

// Chart is a chart archive that Load accepted. It is immutable: each Render
// loads its own copy of the chart, since Helm's dependency processing
// changes the chart it is given.
type Chart struct {
	// Name and Version are the chart's, from its Chart.yaml.
	Name, Version string
	// Digest is the archive's sha256 digest, "sha256:<hex>".
	Digest string
	// Label names the chart in errors: what the caller called it (a
	// reference, a URL), or name-version.
	Label string

	files []*archive.BufferedFile
	meta  *chart.Metadata
	// created is the archive's Chart.yaml time, the republished OCI
	// artifact's creation annotation.
	created time.Time
}

// Error is a chart that cannot be used: too large, malformed, or it does not
// render. Chart names the chart (Chart.Label), never a value.
type Error struct {
	Chart string
	Err   error
}

func (e *Error) Error() string { return "chart " + inert.Quote(e.Chart) + ": " + e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// ErrLimit is wrapped by every error of a bound of Limits.
var ErrLimit = errors.New("over a bound")

// Load checks tgz, a packed chart (helm package's .tgz), against lim and
// loads it with Helm's loader. label names the chart in errors; "" names it
// by its Chart.yaml. Nothing is read but tgz.
func Load(label string, tgz []byte, lim Limits) (*Chart, error) {
	name := label
	if name == "" {
		name = "(unnamed)"
	}
	u := &unpacker{lim: lim}
	files, err := u.unpack(tgz, 0)
	if err != nil {
		return nil, &Error{Chart: name, Err: err}
	}
	c, err := loader.LoadFiles(files)
	if err != nil {
		return nil, &Error{Chart: name, Err: fmt.Errorf("load: %s", inert.Prose(err.Error()))}
	}
	if label == "" {
		label = c.Metadata.Name + "-" + c.Metadata.Version
	}
	sum := sha256.Sum256(tgz)
	out := &Chart{
		Name: c.Metadata.Name, Version: c.Metadata.Version, Label: label,
		Digest: fmt.Sprintf("sha256:%x", sum), files: files, meta: c.Metadata,
	}
	for _, f := range files {
		if f.Name == "Chart.yaml" {
			out.created = f.ModTime.UTC().Truncate(time.Second)
		}
	}
	return out, nil
}

// LoadFiles is Load of a chart given as its files (paths relative to the
// chart's folder, "/"-separated): a folder of a bundle Fleet installs with
// Helm. The files are packed as `helm package` would (one folder, name
// order, a fixed time) and loaded through Load's bounds.
func LoadFiles(label string, files map[string][]byte, lim Limits) (*Chart, error) {
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, n := range names {
		hd := &tar.Header{Name: "chart/" + n, Mode: 0o644, Size: int64(len(files[n])), Typeflag: tar.TypeReg, ModTime: time.Unix(0, 0).UTC(), Format: tar.FormatPAX}
		if err := tw.WriteHeader(hd); err != nil {
			return nil, &Error{Chart: label, Err: err}
		}
		if _, err := tw.Write(files[n]); err != nil {
			return nil, &Error{Chart: label, Err: err}
		}
	}
	if err := tw.Close(); err != nil {
		return nil, &Error{Chart: label, Err: err}
	}
	if err := zw.Close(); err != nil {
		return nil, &Error{Chart: label, Err: err}
	}
	return Load(label, buf.Bytes(), lim)
}

// load returns a fresh copy of the chart for one render, its subcharts
// sorted by name (Helm's loader adds them in map order).
func (c *Chart) load() (*chart.Chart, error) {
	ch, err := loader.LoadFiles(c.files)
	if err != nil {
		return nil, fmt.Errorf("load: %s", inert.Prose(err.Error()))
	}
	sortDependencies(ch)
	return ch, nil
}

func sortDependencies(ch *chart.Chart) {
	deps := ch.Dependencies()
	sort.SliceStable(deps, func(i, j int) bool { return deps[i].Name() < deps[j].Name() })
	ch.SetDependencies(deps...)
	for _, d := range deps {
		sortDependencies(d)
	}
}

type unpacker struct {
	lim   Limits
	files int
	bytes int64
}

var drivePath = regexp.MustCompile(`^[a-zA-Z]:/`)

// unpack reads a chart archive as Helm's archive.LoadArchiveFiles does (the
// first path element is the chart's folder and is dropped; a UTF-8 byte
// order mark is trimmed), within u's bounds, refusing what Helm would read
// differently from a file system: links, devices, absolute paths, "..",
// backslashes, duplicate names. Subchart archives (charts/*.tgz) are checked
// the same way, nested at most lim.Nesting deep; Helm's loader unpacks them
// again, and finds them as checked.
func (u *unpacker) unpack(tgz []byte, nesting int) ([]*archive.BufferedFile, error) {
	if int64(len(tgz)) > u.lim.ArchiveBytes {
		return nil, fmt.Errorf("archive of %d bytes: %w of %d bytes", len(tgz), ErrLimit, u.lim.ArchiveBytes)
	}
	zr, err := gzip.NewReader(bytes.NewReader(tgz))
	if err != nil {
		return nil, fmt.Errorf("not a gzipped tar archive: %w", err)
	}
	defer zr.Close()
	tr := tar.NewReader(zr)
	var files []*archive.BufferedFile
	seen := map[string]bool{}
	top := ""
	for {
		hd, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("read archive: %w", err)
		}
		switch hd.Typeflag {
		case tar.TypeXGlobalHeader, tar.TypeXHeader, tar.TypeDir:
			continue
		case tar.TypeReg:
		default:
			return nil, fmt.Errorf("%s is not a regular file (tar type %q): a chart holds files only", inert.Quote(hd.Name), hd.Typeflag)
		}
		n, first, err := u.entryName(hd.Name)
		if err != nil {
			return nil, err
		}
		if top == "" {
			top = first
		} else if first != top {
			return nil, fmt.Errorf("%s is outside the chart's folder %s", inert.Quote(hd.Name), inert.Quote(top))
		}
		if seen[n] {
			return nil, fmt.Errorf("%s is in the archive twice", inert.Quote(hd.Name))
		}
		seen[n] = true
		if u.files++; u.files > u.lim.Files {
			return nil, fmt.Errorf("more than %d files: %w", u.lim.Files, ErrLimit)
		}
		if hd.Size > u.lim.FileBytes {
			return nil, fmt.Errorf("file %s of %d bytes: %w of %d bytes", inert.Quote(n), hd.Size, ErrLimit, u.lim.FileBytes)
		}
		if u.bytes+hd.Size > u.lim.DecompressedBytes {
			return nil, fmt.Errorf("more than %d bytes unpacked: %w", u.lim.DecompressedBytes, ErrLimit)
		}
		data, err := io.ReadAll(io.LimitReader(tr, hd.Size))
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", inert.Quote(n), err)
		}
		u.bytes += int64(len(data))
		data = bytes.TrimPrefix(data, []byte{0xEF, 0xBB, 0xBF})
		files = append(files, &archive.BufferedFile{Name: n, ModTime: hd.ModTime, Data: data})
		if sub, ok := subchartArchive(n); ok {
			if nesting+1 > u.lim.Nesting {
				return nil, fmt.Errorf("subchart %s: archives nested more than %d deep: %w", inert.Quote(sub), u.lim.Nesting, ErrLimit)
			}
			if _, err := u.unpack(data, nesting+1); err != nil {
				return nil, fmt.Errorf("subchart %s: %w", inert.Quote(sub), err)
			}
		}
	}
	if len(files) == 0 {
		return nil, errors.New("no files in the archive")
	}
	return files, nil
}

// entryName returns a tar entry's name inside the chart (the first element
// dropped) and that first element, or why it is refused.
func (u *unpacker) entryName(raw string) (string, string, error) {
	if strings.ContainsAny(raw, "\\\x00") {
		return "", "", fmt.Errorf("%s: a path with a backslash or NUL", inert.Quote(raw))
	}
	if path.IsAbs(raw) || drivePath.MatchString(raw) {
		return "", "", fmt.Errorf("%s: an absolute path", inert.Quote(raw))
	}
	for _, e := range strings.Split(raw, "/") {
		if e == ".." {
			return "", "", fmt.Errorf("%s: a path that leaves the archive", inert.Quote(raw))
		}
	}
	first, rest, ok := strings.Cut(raw, "/")
	if !ok || first == "" || first == "." {
		return "", "", fmt.Errorf("%s is not inside the chart's folder", inert.Quote(raw))
	}
	n := path.Clean(rest)
	if n == "." || n == "" {
		return "", "", fmt.Errorf("%s is not inside the chart's folder", inert.Quote(raw))
	}
	if strings.Count(n, "/") >= u.lim.PathDepth {
		return "", "", fmt.Errorf("%s: more than %d folders deep: %w", inert.Quote(raw), u.lim.PathDepth, ErrLimit)
	}
	return n, first, nil
}

// subchartArchive reports whether name is a subchart archive that Helm's
// loader unpacks: charts/<name>.tgz at any depth of charts/ folders.
func subchartArchive(name string) (string, bool) {
	dir, file := path.Split(name)
	if path.Ext(file) != ".tgz" || !strings.HasSuffix(dir, "charts/") || strings.IndexAny(file, "_.") == 0 {
		return "", false
	}
	return name, true
}

// MissingDependencies names the dependencies of the chart's Chart.yaml that
// its charts/ folder does not hold (Helm's action.CheckDependencies, by name
// or alias), sorted.
func (c *Chart) MissingDependencies() []string {
	ch, err := c.load()
	if err != nil {
		return nil
	}
	have := map[string]bool{}
	for _, d := range ch.Dependencies() {
		have[d.Name()] = true
	}
	var out []string
	for _, d := range ch.Metadata.Dependencies {
		if d == nil || have[d.Name] || (d.Alias != "" && have[d.Alias]) {
			continue
		}
		out = append(out, inert.Quote(d.Name))
	}
	sort.Strings(out)
	return out
}
