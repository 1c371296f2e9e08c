package pipeline

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"fleetgen.dev/fleetgen/internal/inert"
	"fleetgen.dev/fleetgen/pkg/charts"
	"fleetgen.dev/fleetgen/pkg/lock"
	"fleetgen.dev/fleetgen/pkg/mirror"
	"fleetgen.dev/fleetgen/pkg/problem"
)

// A chart's images are known once it renders, and it renders from the chart
// cache: mirror brings every chart the fleet's HelmReleases name into the
// cache (and the mirror) first, then renders them and mirrors every image.
//
//   - An OCI chart is an image of the plan: copied like one (its referrers,
//     spec.verify and spec.sourceMirrors included), then read back from the
//     mirror by digest into the cache (mirrorOCICharts).
//   - A chart of an HTTP repository is pulled once: index.yaml, the exact
//     version, the archive checked against the index's digest and the
//     chart's bounds, republished as an OCI chart with the media types `helm
//     push` writes, pushed to the mirror and locked (lock.Chart). A chart
//     the lock already holds is read from the cache or the mirror by its
//     locked digest, not from the repository again (httpCharts).

// chartUse names who uses a chart, for messages: "HelmRelease apps/web (for
// clusters a, b)".
func (r *chartRenderer) chartUse(label string) string {
	u := r.users[label]
	var parts []string
	for _, who := range slices.Sorted(maps.Keys(u)) {
		parts = append(parts, fmt.Sprintf("%s (%s)", who, problem.Clusters(u[who], "")))
	}
	return strings.Join(parts, ", ")
}

// ociCharts returns the OCI charts r met, by lock key, sorted.
func (r *chartRenderer) ociCharts() []string {
	var out []string
	for _, s := range r.sources {
		if !s.HTTP() {
			out = append(out, s.OCI)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// httpSources returns the HTTP charts r met, sorted by label.
func (r *chartRenderer) httpSources() []*charts.Source {
	var out []*charts.Source
	for _, l := range slices.Sorted(maps.Keys(r.sources)) {
		if s := r.sources[l]; s.HTTP() {
			out = append(out, s)
		}
	}
	return out
}

// cacheOCICharts reads every OCI chart of entries (mirror.Run's, or the
// lock's) into the chart cache, by digest: from the mirror, or with source
// (a dry run copies nothing) from its own registry.
func (ld *Loaded) cacheOCICharts(ctx context.Context, cfg Config, entries []lock.Image, source bool) error {
	r := ld.charts
	opts, err := mirror.Remote(ctx, ld.Fleet.Spec.Registry, registryCredentials(cfg))
	if err != nil {
		return err
	}
	var errs []error
	for _, ref := range r.ociCharts() {
		i, ok := slices.BinarySearchFunc(entries, ref, func(e lock.Image, s string) int { return strings.Compare(e.Source, s) })
		if !ok {
			continue
		}
		e := entries[i]
		at := e.Repository()
		var nopts []name.Option
		if source {
			at, _ = lock.SplitRef(e.Source)
		} else if ld.Fleet.Spec.Registry.Insecure {
			nopts = append(nopts, name.Insecure)
		}
		d, err := name.NewDigest(at+"@"+e.Digest, nopts...)
		if err != nil {
			errs = append(errs, fmt.Errorf("chart %s: %w", ref, err))
			continue
		}
		if _, err := r.cache.Fetch(d, r.lim, true, opts...); err != nil {
			errs = append(errs, fmt.Errorf("chart %s, used by %s: %w", ref, r.chartUse(ref), err))
		}
	}
	return errors.Join(errs...)
}

// httpCharts brings every HTTP chart ld's HelmReleases name into the chart
// cache and, unless dryRun, the mirror, and returns their lock entries,
// sorted. An index, version or archive the repository does not serve as the
// HelmRelease asks is an input error when it is the input's (a version the
// index lacks, a chart over a bound), a runtime error otherwise (the
// repository unreachable, an archive that does not match the index).
func (ld *Loaded) httpCharts(ctx context.Context, cfg Config, dryRun bool) ([]lock.Chart, error) {
	r := ld.charts
	srcs := r.httpSources()
	if len(srcs) == 0 {
		return nil, nil
	}
	reg := ld.Fleet.Spec.Registry
	opts, err := mirror.Remote(ctx, reg, registryCredentials(cfg))
	if err != nil {
		return nil, err
	}
	client, err := mirror.HTTPClient()
	if err != nil {
		return nil, err
	}
	var refs []string
	for _, s := range srcs {
		ref, err := httpChartRef(s)
		if err != nil {
			return nil, problem.Invalid(fmt.Errorf("chart %s, used by %s: %w", inert.Quote(s.Label()), r.chartUse(s.Label()), err))
		}
		refs = append(refs, ref)
	}
	pairs, err := mirror.Plan(reg, refs)
	if err != nil {
		return nil, err
	}
	target := map[string]string{}
	for _, p := range pairs {
		target[p.Source] = p.Target
	}
	indexes := map[string]*charts.Index{}
	var out []lock.Chart
	var errs []error
	for i, s := range srcs {
		n, _ := lock.Normalize(refs[i])
		t := target[n]
		entry, err := ld.httpChart(ctx, s, t, client, indexes, opts, dryRun)
		if err != nil {
			err = fmt.Errorf("chart %s, used by %s: %w", inert.Quote(s.Label()), r.chartUse(s.Label()), err)
			if problem.IsInvalid(err) || errors.Is(err, charts.ErrVersion) || errors.Is(err, charts.ErrLimit) {
				err = problem.Invalid(err)
			}
			errs = append(errs, err)
			continue
		}
		out = append(out, entry)
	}
	if len(errs) > 0 {
		if slices.ContainsFunc(errs, func(e error) bool { return !problem.IsInvalid(e) }) {
			return nil, errors.Join(errs...)
		}
		return nil, problem.Invalid(errors.Join(errs...))
	}
	return out, nil
}

// httpChart brings one HTTP chart into the cache and the mirror (at target,
// the repository tagged with the version).
func (ld *Loaded) httpChart(ctx context.Context, s *charts.Source, target string, client *http.Client, indexes map[string]*charts.Index, opts []remote.Option, dryRun bool) (lock.Chart, error) {
	r := ld.charts
	var nopts []name.Option
	if ld.Fleet.Spec.Registry.Insecure {
		nopts = append(nopts, name.Insecure)
	}
	tag, err := name.NewTag(target, nopts...)
	if err != nil {
		return lock.Chart{}, err
	}
	// Locked already: from the cache or the mirror by digest, never the
	// repository again.
	if e, ok := ld.Lock.Chart(s.URL, s.Chart, s.Version); ok && e.Target == target {
		d := tag.Context().Digest(e.Digest)
		if a, err := r.cache.Fetch(d, r.lim, true, opts...); err == nil {
			if _, err := remote.Head(d, opts...); err != nil && !dryRun {
				if err := charts.PushOCI(a, tag, opts...); err != nil {
					return lock.Chart{}, err
				}
			}
			return e, nil
		}
	}
	ix := indexes[s.URL]
	if ix == nil {
		if ix, err = charts.FetchIndex(ctx, client, s.URL); err != nil {
			return lock.Chart{}, err
		}
		indexes[s.URL] = ix
	}
	cv, err := ix.Find(s.Chart, s.Version)
	if err != nil {
		return lock.Chart{}, err
	}
	archive, err := charts.FetchArchive(ctx, client, s.URL, cv, r.lim)
	if err != nil {
		return lock.Chart{}, err
	}
	ch, err := charts.Load(s.Label(), archive, r.lim)
	if err != nil {
		return lock.Chart{}, problem.Invalid(err)
	}
	if ch.Name != s.Chart {
		return lock.Chart{}, problem.Invalid(fmt.Errorf("the archive holds chart %s, not %s", inert.Quote(ch.Name), inert.Quote(s.Chart)))
	}
	a, err := charts.Republish(ch, archive)
	if err != nil {
		return lock.Chart{}, err
	}
	if err := r.cache.PutArtifact(a, r.lim); err != nil {
		return lock.Chart{}, err
	}
	if !dryRun {
		if err := charts.PushOCI(a, tag, opts...); err != nil {
			return lock.Chart{}, err
		}
	}
	return lock.Chart{Repository: s.URL, Chart: s.Chart, Version: s.Version, Archive: ch.Digest, Target: target, Digest: a.Digest}, nil
}

// httpChartRef is the reference an HTTP chart is mirrored as, before
// spec.registry's naming (mirror.Plan): the repository's host and path, the
// chart's name, the version as tag (`helm push` writes + as _), lower-cased
// as repository names must be: https://charts.example/Stable web 1.2.3 →
// charts.example/stable/web:1.2.3.
func httpChartRef(s *charts.Source) (string, error) {
	u, err := url.Parse(s.URL)
	if err != nil || u.Host == "" {
		return "", errors.New("the repository URL is not a URL")
	}
	p := strings.ToLower(strings.Trim(u.Path, "/"))
	ref := strings.ToLower(u.Host)
	if p != "" {
		ref += "/" + p
	}
	ref += "/" + strings.ToLower(s.Chart) + ":" + strings.ReplaceAll(s.Version, "+", "_")
	if _, err := name.NewTag(ref, name.StrictValidation); err != nil {
		return "", fmt.Errorf("the repository URL, chart and version make no OCI reference to mirror it as (%s)", inert.Prose(err.Error()))
	}
	return ref, nil
}
