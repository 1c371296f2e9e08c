package mirror

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"fleetgen.dev/fleetgen/internal/inert"
	"fleetgen.dev/fleetgen/pkg/lock"
	"fleetgen.dev/fleetgen/pkg/problem"
	"fleetgen.dev/fleetgen/pkg/schema"
)

// The air gap (SPEC §2, §4): ToLayout writes locked images into an OCI image
// layout on the connected side, FromLayout pushes them from it into the
// registry on the other. Both run Run, the one copier: the layout is a
// registry to it (local.go), written through layoutSink or read through
// layoutSource. Both pin every image by the digest the lock names, so that
// neither resolves a tag nor changes the lock; both verify signatures with
// WithVerify (at the source before writing, from the layout before pushing).

// ToLayout writes each image of images (lock entries) with every platform
// and every referrer Run's walk finds at its source (the lock's among them)
// into a new OCI image layout at path: a folder, or a tar when path ends in
// .tar. index.json names each image by its source reference (LayoutRefName)
// and lists the lock's referrers (a cosign tag as SOURCE-REPO:TAG). Nothing
// is at path unless all of it was written; path must not exist. Options go
// to Run (WithVerify, credentials for the sources, WithJobs, progress).
func ToLayout(ctx context.Context, path string, images []lock.Image, opts ...Option) (Stats, error) {
	if _, err := os.Lstat(path); err == nil {
		return Stats{}, problem.Invalid(fmt.Errorf("mirror --to: %s exists: want a new path (a folder, or a file ending in .tar)", path))
	}
	tmp, err := os.MkdirTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-")
	if err != nil {
		return Stats{}, fmt.Errorf("mirror --to: %w", err)
	}
	defer os.RemoveAll(tmp)
	sink, err := newLayoutSink(tmp)
	if err != nil {
		return Stats{}, fmt.Errorf("mirror --to: %w", err)
	}
	hosts := sourceHosts(images)
	pairs := make([]Pair, len(images))
	shown := map[Pair]Pair{}
	for i, img := range images {
		src, err := pinned(img)
		if err != nil {
			return Stats{}, err
		}
		host, rest, _ := strings.Cut(img.Source, "/")
		pairs[i] = Pair{Source: src, Target: layoutHost + "/s" + strconv.Itoa(slices.Index(hosts, host)) + "/" + rest}
		shown[pairs[i]] = Pair{Source: img.Source, Target: "oci-layout:" + path}
	}
	display := func(p Pair) Pair { return shown[p] }
	entries, stats, err := Run(ctx, pairs, append(opts, withLocal(sink), WithInsecure(true), withDisplay(display))...)
	if err != nil {
		return stats, err
	}
	if err := sameReferrers(images, entries, "no longer at its source (run `fleetgen mirror`)"); err != nil {
		return stats, err
	}
	descs, keep, err := layoutEntries(sink, images)
	if err != nil {
		return stats, err
	}
	if err := sink.close(); err != nil {
		return stats, err
	}
	if err := prune(tmp, keep); err != nil {
		return stats, err
	}
	if err := writeLayoutIndex(tmp, descs); err != nil {
		return stats, fmt.Errorf("mirror --to: %w", err)
	}
	if !IsTar(path) {
		return stats, os.Rename(tmp, path)
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-")
	if err != nil {
		return stats, err
	}
	defer os.Remove(f.Name())
	if err := tarLayout(f, tmp); err != nil {
		f.Close()
		return stats, fmt.Errorf("mirror --to: write %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return stats, err
	}
	if err := f.Close(); err != nil {
		return stats, err
	}
	return stats, os.Rename(f.Name(), path)
}

// FromLayout pushes into reg, from the OCI image layout at path (a folder
// or a tar; written by ToLayout or `oras backup`), exactly what images (lock
// entries) name: each image by its digest, with its platforms, tagged as
// the lock's target says, and every referrer the lock lists (by digest, and
// by its cosign tag). A manifest the lock names that the layout lacks fails
// the push before anything is copied; the copier checks every digest as it
// reads, and WithVerify every signature, before it pushes an image. It
// returns the entries Run made (the lock's, by digest and referrers).
func FromLayout(ctx context.Context, path string, reg schema.Registry, images []lock.Image, opts ...Option) ([]lock.Image, Stats, error) {
	lf, err := openLayout(path)
	if err != nil {
		return nil, Stats{}, problem.Invalid(fmt.Errorf("mirror --from: %w", err))
	}
	defer lf.Close()
	hosts := sourceHosts(images)
	src, err := newLayoutSource(lf, images, hosts)
	if err != nil {
		return nil, Stats{}, fmt.Errorf("mirror --from %s: %w", path, err)
	}
	sources := make([]string, len(images))
	for i, img := range images {
		sources[i] = img.Source
	}
	planned, err := Plan(reg, sources)
	if err != nil {
		return nil, Stats{}, err
	}
	target := map[string]string{}
	for _, p := range planned {
		target[p.Source] = p.Target
	}
	pairs := make([]Pair, len(images))
	shown := map[Pair]Pair{}
	for i, img := range images {
		src, err := pinned(img)
		if err != nil {
			return nil, Stats{}, err
		}
		n, err := lock.Normalize(img.Source)
		if err != nil {
			return nil, Stats{}, fmt.Errorf("lock entry %s: %w", inert.Quote(img.Source), err)
		}
		pairs[i] = Pair{Source: src, Target: target[n]}
		shown[pairs[i]] = Pair{Source: img.Source, Target: target[n]}
	}
	mirrors := make([]SourceMirror, len(hosts))
	for i, h := range hosts {
		mirrors[i] = SourceMirror{Host: h, Mirror: layoutHost + "/s" + strconv.Itoa(i), Insecure: true}
	}
	display := func(p Pair) Pair { return shown[p] }
	entries, stats, err := Run(ctx, pairs, append(opts, withLocal(src), WithSourceMirrors(mirrors), WithInsecure(reg.Insecure), withDisplay(display))...)
	if err != nil {
		return nil, stats, err
	}
	if err := sameReferrers(images, entries, "not in the layout"); err != nil {
		return nil, stats, err
	}
	return entries, stats, nil
}

// sourceHosts are the source registries of images, sorted.
func sourceHosts(images []lock.Image) []string {
	var hosts []string
	for _, img := range images {
		h, _, _ := strings.Cut(img.Source, "/")
		hosts = append(hosts, h)
	}
	slices.Sort(hosts)
	return slices.Compact(hosts)
}

// pinned is a lock entry's source pinned by the digest it locks.
func pinned(img lock.Image) (string, error) {
	if _, err := v1.NewHash(img.Digest); err != nil {
		return "", fmt.Errorf("lock entry %s: %w", inert.Quote(img.Source), err)
	}
	if strings.Contains(img.Source, "@") {
		return img.Source, nil
	}
	return img.Source + "@" + img.Digest, nil
}

// sameReferrers checks that Run found, for every image, every referrer the
// lock lists; why says where one missing is not.
func sameReferrers(images []lock.Image, entries []lock.Image, why string) error {
	found := map[string]map[string]bool{}
	for _, e := range entries {
		found[e.Digest] = map[string]bool{}
		for _, r := range e.Referrers {
			found[e.Digest][r.Digest] = true
		}
	}
	var missing []string
	for _, img := range images {
		for _, r := range img.Referrers {
			if !found[img.Digest][r.Digest] {
				missing = append(missing, fmt.Sprintf("%s: referrer %s (%s)", inert.Quote(img.Source), r.Digest, inert.Quote(r.ArtifactType)))
			}
		}
	}
	if len(missing) == 0 {
		return nil
	}
	sort.Strings(missing)
	return fmt.Errorf("%d referrer(s) the lock lists are %s:\n  %s", len(missing), why, strings.Join(missing, "\n  "))
}

// layoutEntries are index.json's entries for images (their manifests, as
// the sink holds them) and the blobs the layout keeps: every manifest, config
// and layer of the images and of their locked referrers.
func layoutEntries(sink *layoutSink, images []lock.Image) ([]v1.Descriptor, map[string]bool, error) {
	keep := map[string]bool{}
	var walk func(d v1.Hash) (storedManifest, error)
	walk = func(d v1.Hash) (storedManifest, error) {
		m, ok := sink.manifest(d)
		if !ok {
			return m, fmt.Errorf("mirror --to: manifest %s was not written", d)
		}
		if keep[d.Hex] {
			return m, nil
		}
		keep[d.Hex] = true
		if m.mt.IsIndex() {
			idx, err := parseIndex(layoutHost, d, m.raw)
			if err != nil {
				return m, err
			}
			for _, c := range idx.Manifests {
				if _, err := walk(c.Digest); err != nil {
					return m, err
				}
			}
			return m, nil
		}
		var mf struct {
			Config v1.Descriptor   `json:"config"`
			Layers []v1.Descriptor `json:"layers"`
		}
		if err := json.Unmarshal(m.raw, &mf); err != nil {
			return m, fmt.Errorf("mirror --to: manifest %s: %w", d, err)
		}
		for _, b := range append([]v1.Descriptor{mf.Config}, mf.Layers...) {
			if len(b.URLs) == 0 && b.Digest.Hex != "" {
				keep[b.Digest.Hex] = true
			}
		}
		return m, nil
	}
	seen := map[string]bool{}
	var descs []v1.Descriptor
	add := func(d v1.Hash, ref, artifactType string) error {
		m, err := walk(d)
		if err != nil {
			return err
		}
		if key := d.String() + " " + ref; !seen[key] {
			seen[key] = true
			desc := v1.Descriptor{MediaType: m.mt, Digest: d, Size: int64(len(m.raw)), ArtifactType: artifactType}
			if ref != "" {
				desc.Annotations = map[string]string{LayoutRefName: ref}
			}
			descs = append(descs, desc)
		}
		return nil
	}
	for _, img := range images {
		d, _ := v1.NewHash(img.Digest)
		if err := add(d, img.Source, ""); err != nil {
			return nil, nil, err
		}
		repo, _ := lock.SplitRef(img.Source)
		for _, r := range img.Referrers {
			rd, err := v1.NewHash(r.Digest)
			if err != nil {
				return nil, nil, err
			}
			ref := ""
			if r.Tag != "" {
				ref = repo + ":" + r.Tag
			}
			if err := add(rd, ref, r.ArtifactType); err != nil {
				return nil, nil, err
			}
		}
	}
	return descs, keep, nil
}

// prune removes the blobs of the layout folder dir that keep does not
// name: what Run's walk copied beyond the lock (a referrer added since).
func prune(dir string, keep map[string]bool) error {
	blobs := filepath.Join(dir, "blobs", "sha256")
	entries, err := os.ReadDir(blobs)
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range entries {
		if !keep[e.Name()] {
			errs = append(errs, os.Remove(filepath.Join(blobs, e.Name())))
		}
	}
	return errors.Join(errs...)
}
