package pipeline

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"fleetgen.dev/fleetgen/internal/inert"
	"fleetgen.dev/fleetgen/pkg/charts"
	"fleetgen.dev/fleetgen/pkg/layers"
	"fleetgen.dev/fleetgen/pkg/lock"
	"fleetgen.dev/fleetgen/pkg/schema"
)

// chartRenderer renders the chart of every HelmRelease a cluster receives
// (layers.Options.Charts) from the chart the lock pins, read from the chart
// cache by its digest: offline once `fleetgen mirror` ran on this machine;
// with remote set (Config.FetchCharts), a chart the cache lacks is fetched
// by its locked digest from the mirror, read-only, checked and kept. A chart
// renders once per distinct input (charts.Memo), whatever the number of
// clusters.
type chartRenderer struct {
	f     *schema.Fleet
	lock  *lock.Lock
	cache *charts.Cache
	// cacheErr is why there is no chart cache (no user cache folder).
	cacheErr error
	lim      charts.Limits
	memo     *charts.Memo
	remote   []remote.Option // nil: never fetch
	// pending (mirror's first pass) renders nothing for a chart the lock or
	// the cache lacks, with no error: mirror fetches it next.
	pending bool

	mu       sync.Mutex
	kube     map[string]string         // cluster → kubernetesVersion
	loaded   map[string]*loadedChart   // by digest
	objects  map[*charts.Result]objset // a result as the model's objects, by namespace
	releases map[releaseKey]*chartRelease
	done     map[doneKey]*done
	ids      map[*layers.Object]uint64      // fingerprint's numbers
	sources  map[string]*charts.Source      // every chart source met, by Label
	users    map[string]map[string][]string // Label → HelmRelease → clusters
	fatal    error                          // the first failure that is not the input's
}

type loadedChart struct {
	chart *charts.Chart
	err   error
}

type objset map[string][]*layers.Object

type releaseKey struct {
	cluster string
	obj     *layers.Object
}

// chartRelease is one HelmRelease as a cluster receives it, its chart
// rendered: what render's patch of the layer's Kustomization needs (the
// chart source to point at the mirror, the images to pin).
type chartRelease struct {
	Release *charts.Release
	Source  *charts.Source
	Result  *charts.Result
}

func newChartRenderer(f *schema.Fleet, l *lock.Lock, cfg Config) *chartRenderer {
	dir, cacheErr := cfg.ChartCache, error(nil)
	if dir == "" {
		// A machine without a user cache folder fails only where a chart is
		// needed.
		dir, cacheErr = charts.DefaultCacheDir()
	}
	r := &chartRenderer{f: f, lock: l, cache: charts.NewCache(dir), cacheErr: cacheErr, lim: charts.DefaultLimits(), memo: charts.NewMemo(),
		kube: map[string]string{}, loaded: map[string]*loadedChart{}, objects: map[*charts.Result]objset{},
		releases: map[releaseKey]*chartRelease{}, done: map[doneKey]*done{}, ids: map[*layers.Object]uint64{}, sources: map[string]*charts.Source{}, users: map[string]map[string][]string{}}
	for _, c := range f.Spec.Clusters {
		r.kube[c.Name] = c.KubernetesVersion
	}
	return r
}

// previous returns a renderer of the charts of a previous render (diff's
// DIR) with r's lock, cache and renders: a chart the lock no longer pins is
// not rendered (pending), and nothing is fetched.
func (r *chartRenderer) previous() *chartRenderer {
	p := newChartRenderer(r.f, r.lock, Config{})
	p.cache, p.cacheErr, p.memo, p.pending = r.cache, r.cacheErr, r.memo, true
	return p
}

// fail keeps err, a failure that is not the input's (the cache, the
// network), as the one Load returns (exit 1), and returns it for the model.
func (r *chartRenderer) fail(err error) error {
	r.mu.Lock()
	if r.fatal == nil {
		r.fatal = err
	}
	r.mu.Unlock()
	return err
}

// render is the layers.ChartRenderer. The clusters that receive one set of
// a layer receive the same HelmRelease object with the same objects beside
// it: for those with the same Kubernetes version the first one's answer is
// theirs, without parsing or keying the release again (10,000 clusters
// share a handful of sets).
func (r *chartRenderer) render(cluster string, obj *layers.Object, received []*layers.Object) ([]*layers.Object, error) {
	r.mu.Lock()
	k := doneKey{obj: obj, kube: r.kube[cluster], received: r.fingerprint(received)}
	d, ok := r.done[k]
	if ok {
		if d.rel != nil {
			r.releases[releaseKey{cluster, obj}] = d.rel
		}
		if d.src != nil {
			r.use(d.src, obj, cluster)
		}
	}
	r.mu.Unlock()
	if ok {
		return d.objs, d.err
	}
	d = &done{}
	d.objs, d.err = r.renderOnce(cluster, obj, received, d)
	r.mu.Lock()
	r.done[k] = d
	r.mu.Unlock()
	return d.objs, d.err
}

type doneKey struct {
	obj      *layers.Object
	received uint64
	kube     string
}

// fingerprint identifies the objects of received, by identity (the model
// shares objects between clusters: equal identities, equal objects): an
// FNV-1a hash of the number each object is given the first time it is seen.
// r.mu is held.
func (r *chartRenderer) fingerprint(received []*layers.Object) uint64 {
	h := uint64(14695981039346656037)
	for _, o := range received {
		id, ok := r.ids[o]
		if !ok {
			id = uint64(len(r.ids)) + 1
			r.ids[o] = id
		}
		for i := 0; i < 8; i++ {
			h ^= (id >> (8 * i)) & 0xff
			h *= 1099511628211
		}
	}
	return h
}

type done struct {
	objs []*layers.Object
	err  error
	rel  *chartRelease
	src  *charts.Source
}

// use records that cluster's obj uses src's chart, for messages.
func (r *chartRenderer) use(src *charts.Source, obj *layers.Object, cluster string) {
	r.useBy(src, "HelmRelease "+inert.Quote(qualified(obj.Namespace, obj.Name)), cluster)
}

// useBy records that who (a HelmRelease, a bundle) uses src's chart in
// cluster, for mirror (which charts) and messages (who uses them).
func (r *chartRenderer) useBy(src *charts.Source, who, cluster string) {
	l := src.Label()
	if _, ok := r.sources[l]; !ok {
		r.sources[l] = src
		r.users[l] = map[string][]string{}
	}
	u := r.users[l]
	if cs := u[who]; len(cs) == 0 || cs[len(cs)-1] != cluster {
		u[who] = append(cs, cluster)
	}
}

func (r *chartRenderer) renderOnce(cluster string, obj *layers.Object, received []*layers.Object, d *done) ([]*layers.Object, error) {
	rel, err := charts.ParseRelease(obj.Map())
	if err != nil {
		return nil, err
	}
	index := make(map[[3]string]*layers.Object, len(received))
	for _, o := range received {
		index[[3]string{o.Kind, o.Namespace, o.Name}] = o
	}
	find := func(kind, ns, name string) map[string]any {
		if o := index[[3]string{kind, ns, name}]; o != nil {
			return o.Map()
		}
		return nil
	}
	src, err := charts.ResolveSource(rel, find)
	if errors.Is(err, charts.ErrUnsupported) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	d.src = src
	r.mu.Lock()
	r.use(src, obj, cluster)
	r.mu.Unlock()
	_, digest, ok := chartTarget(r.lock, src)
	if !ok {
		if r.pending {
			return nil, nil
		}
		return nil, fmt.Errorf("chart %s is not in %s: run `fleetgen mirror`", inert.Quote(src.Label()), lock.FileName)
	}
	ch, err := r.chart(src, digest)
	if err != nil {
		if r.pending && errors.Is(err, charts.ErrNotCached) {
			return nil, nil
		}
		return nil, err
	}
	values, _, err := rel.Values(func(kind, ns, name string) map[string]any {
		if kind != "ConfigMap" && kind != "Secret" {
			return nil
		}
		return find(kind, ns, name)
	})
	if err != nil {
		return nil, err
	}
	apis, crds := customAPIs(received)
	in := charts.Input{Release: rel, Values: values, KubeVersion: r.kube[cluster], APIVersions: apis}
	res, err := r.memo.Render(context.Background(), ch, in, r.lim)
	if err != nil {
		return nil, err
	}
	d.rel = &chartRelease{Release: rel, Source: src, Result: res}
	r.mu.Lock()
	r.releases[releaseKey{cluster, obj}] = d.rel
	r.mu.Unlock()
	return r.layerObjects(res, rel.HelmNamespace(), crds)
}

// chartTarget returns where the mirror holds src's chart as l locks it:
// the repository and the digest.
func chartTarget(l *lock.Lock, src *charts.Source) (repo, digest string, ok bool) {
	if src.HTTP() {
		c, ok := l.Chart(src.URL, src.Chart, src.Version)
		repo, _ := lock.SplitRef(c.Target)
		return repo, c.Digest, ok
	}
	img, ok := l.Image(src.OCI)
	return img.Repository(), img.Digest, ok
}

// chart loads the chart of digest once: from the cache, or, with r.remote,
// from the mirror.
func (r *chartRenderer) chart(src *charts.Source, digest string) (*charts.Chart, error) {
	r.mu.Lock()
	lc, ok := r.loaded[digest]
	if !ok {
		lc = &loadedChart{}
		r.loaded[digest] = lc
		r.mu.Unlock()
		lc.chart, lc.err = r.fetch(src, digest)
	} else {
		r.mu.Unlock()
	}
	return lc.chart, lc.err
}

func (r *chartRenderer) fetch(src *charts.Source, digest string) (*charts.Chart, error) {
	label := src.Label()
	if r.cacheErr != nil {
		return nil, r.fail(fmt.Errorf("chart %s: %w", inert.Quote(label), r.cacheErr))
	}
	a, err := r.cache.Artifact(digest, r.lim)
	if errors.Is(err, charts.ErrNotCached) && r.remote != nil {
		repo, _, _ := chartTarget(r.lock, src)
		var ref name.Digest
		opts := []name.Option{}
		if r.f.Spec.Registry.Insecure {
			opts = append(opts, name.Insecure)
		}
		if ref, err = name.NewDigest(repo+"@"+digest, opts...); err == nil {
			a, err = r.cache.Fetch(ref, r.lim, true, r.remote...)
			if err != nil && !errors.Is(err, charts.ErrDigest) {
				return nil, r.fail(fmt.Errorf("chart %s: from the mirror: %w", inert.Quote(label), err))
			}
		}
	}
	switch {
	case errors.Is(err, charts.ErrNotCached):
		return nil, fmt.Errorf("chart %s (%s) is not in the chart cache: run `fleetgen mirror` on this machine, or give the command read access to the mirror with --fetch-charts (docs/ci.md): %w",
			inert.Quote(label), digest, charts.ErrNotCached)
	case errors.Is(err, charts.ErrDigest):
		return nil, r.fail(fmt.Errorf("chart %s: the bytes the chart cache or the mirror holds are not those %s locks (%s): refused", inert.Quote(label), lock.FileName, digest))
	case err != nil:
		return nil, r.fail(fmt.Errorf("chart %s: %w", inert.Quote(label), err))
	}
	return charts.Load(label, a.Archive, r.lim)
}

// layerObjects returns res's objects as the model's, in namespace ns, made
// once per result and namespace.
func (r *chartRenderer) layerObjects(res *charts.Result, ns string, crds map[string]bool) ([]*layers.Object, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if objs, ok := r.objects[res][ns]; ok {
		return objs, nil
	}
	var out []*layers.Object
	for _, o := range res.InReleaseNamespace(ns, crds) {
		lo, err := layers.NewObject(o.Map, o.Template)
		if err != nil {
			return nil, fmt.Errorf("chart %s: %s: %v", inert.Quote(res.Chart), inert.Quote(o.Template), err)
		}
		out = append(out, lo)
	}
	if out == nil {
		out = []*layers.Object{}
	}
	if r.objects[res] == nil {
		r.objects[res] = objset{}
	}
	r.objects[res][ns] = out
	return out, nil
}

// customAPIs returns what the CustomResourceDefinitions of objs serve, as
// .Capabilities.APIVersions lists them ("group/version", "group/version/Kind"),
// and their cluster-scoped kinds ("group/Kind").
func customAPIs(objs []*layers.Object) ([]string, map[string]bool) {
	var apis []string
	crds := map[string]bool{}
	for _, o := range objs {
		if o.Kind != "CustomResourceDefinition" || o.APIVersion != "apiextensions.k8s.io/v1" {
			continue
		}
		spec, _ := o.Map()["spec"].(map[string]any)
		group, _ := spec["group"].(string)
		names, _ := spec["names"].(map[string]any)
		kind, _ := names["kind"].(string)
		if scope, _ := spec["scope"].(string); scope == "Cluster" {
			crds[group+"/"+kind] = true
		}
		versions, _ := spec["versions"].([]any)
		for _, v := range versions {
			vm, _ := v.(map[string]any)
			if served, _ := vm["served"].(bool); !served {
				continue
			}
			n, _ := vm["name"].(string)
			apis = append(apis, group+"/"+n, group+"/"+n+"/"+kind)
		}
	}
	return apis, crds
}

// renderBundle is the layers.BundleChartRenderer: a bundle of a delivery
// from the fleet's own source that is a Helm chart, rendered as Fleet's
// agent installs it (charts.Release.Fleet) with the cluster's Kubernetes
// version. The chart is the bundle's files: no lock, no cache. Clusters of
// one Kubernetes version with the same chart, release and values share one
// render (charts.Memo) and one slice of objects.
func (r *chartRenderer) renderBundle(cluster string, c layers.BundleChart) ([]*layers.Object, error) {
	var ch *charts.Chart
	var err error
	if c.Remote != nil {
		ch, err = r.remoteBundleChart(cluster, c)
	} else {
		ch, err = charts.LoadFiles(c.Label, c.Files, r.lim)
	}
	if err != nil {
		return nil, err
	}
	if missing := ch.MissingDependencies(); len(missing) > 0 && c.DependencyUpdate {
		return nil, &layers.NotModelledError{Why: fmt.Sprintf("is a Helm chart whose dependencies %s `fleet apply` fetches with `helm dependency update` (the network)", strings.Join(missing, ", "))}
	} else if len(missing) > 0 {
		return nil, fmt.Errorf("chart %s: its dependencies %s are not in its charts/ folder and helm.disableDependencyUpdate is set: Helm refuses to install it",
			inert.Quote(c.Label), strings.Join(missing, ", "))
	}
	rel := &charts.Release{Name: c.Release, Namespace: c.Namespace, Fleet: true}
	rel.Spec.ReleaseName = c.Release
	r.mu.Lock()
	kube := r.kube[cluster]
	r.mu.Unlock()
	res, err := r.memo.Render(context.Background(), ch, charts.Input{Release: rel, Values: c.Values, KubeVersion: kube}, r.lim)
	if err != nil {
		return nil, err
	}
	if c.Raw {
		return r.layerObjects(res, "", nil)
	}
	return r.layerObjects(res, c.Namespace, nil)
}

// bundleSource returns where a bundle's remote chart comes from, as
// `fleet apply` downloads it: an OCI chart (helm.repo, or helm.chart,
// oci://host/path, at helm.version) or helm.chart of the HTTP repository
// helm.repo's index. A version that is not one exact version (a range, none)
// is a chart fleetgen cannot lock: not modelled.
func bundleSource(c layers.BundleChart) (*charts.Source, error) {
	rc := c.Remote
	src := &charts.Source{Kind: "bundle", Name: c.Label}
	if rc.Version == "" || charts.ExactVersion(rc.Version) != nil {
		return nil, &layers.NotModelledError{Why: fmt.Sprintf("deploys a Helm chart at version %s, which `fleet apply` resolves when it runs: fleetgen mirrors and locks one exact version (helm.version, e.g. 1.2.3)", inert.Quote(rc.Version))}
	}
	oci := rc.Repo
	if oci == "" {
		oci = rc.Chart
	}
	if strings.HasPrefix(oci, "oci://") {
		src.URL = oci
		ref := strings.TrimSuffix(strings.TrimPrefix(oci, "oci://"), "/") + ":" + rc.Version
		n, err := lock.Normalize(ref)
		if err != nil {
			return nil, fmt.Errorf("helm.repo %s and helm.version are not an OCI reference", inert.Quote(oci))
		}
		src.OCI = n
		return src, nil
	}
	if rc.Chart == "" || strings.ContainsAny(rc.Chart, "/:@ ") {
		return nil, fmt.Errorf("helm.chart %s is not a chart name of the repository helm.repo", inert.Quote(rc.Chart))
	}
	src.URL, src.Chart, src.Version = strings.TrimSuffix(rc.Repo, "/"), rc.Chart, rc.Version
	return src, nil
}

// remoteBundleChart is the chart of a bundle that `fleet apply` downloads,
// as the lock pins it, read from the chart cache (or, with --fetch-charts,
// the mirror): mirror fetches it as it fetches a HelmRelease's.
func (r *chartRenderer) remoteBundleChart(cluster string, c layers.BundleChart) (*charts.Chart, error) {
	src, err := bundleSource(c)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	r.useBy(src, "bundle "+inert.Quote(c.Label), cluster)
	r.mu.Unlock()
	_, digest, ok := chartTarget(r.lock, src)
	if !ok {
		if r.pending {
			return nil, &layers.NotModelledError{Why: "deploys a Helm chart mirror has not fetched yet"}
		}
		return nil, fmt.Errorf("chart %s is not in %s: run `fleetgen mirror`", inert.Quote(src.Label()), lock.FileName)
	}
	ch, err := r.chart(src, digest)
	if r.pending && errors.Is(err, charts.ErrNotCached) {
		return nil, &layers.NotModelledError{Why: "deploys a Helm chart mirror has not fetched yet"}
	}
	return ch, err
}
