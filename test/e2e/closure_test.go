package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"fleetgen.dev/fleetgen/pkg/layers"
	"fleetgen.dev/fleetgen/pkg/lock"
	"fleetgen.dev/fleetgen/pkg/pipeline"
	fleetschema "fleetgen.dev/fleetgen/pkg/schema"
	"fleetgen.dev/fleetgen/pkg/workload"
	"fleetgen.dev/fleetgen/test/testenv"
)

// nestedLayer is an app of apps: its build is a Flux Kustomization of the
// bootstrap source whose own spec (namePrefix, a patch, commonMetadata,
// post-build substitution from its spec, from the layer's variables and from
// a ConfigMap of the layer) decides what it applies. The real
// kustomize-controller reconciles it on the workload cluster, and assertion
// 8 compares what is live with what fleetgen's model says (issue 39, item 1).
const (
	nestedLayer         = "nested"
	nestedKustomization = "nested-apps"
)

var nestedFiles = map[string]string{
	"nested/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [ks.yaml, vars.yaml]\n",
	"nested/vars.yaml":          "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: nested-vars, namespace: flux-system}\ndata: {tier: gold}\n",
	"nested/ks.yaml": `apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: ` + nestedKustomization + `, namespace: flux-system}
spec:
  interval: 1m
  prune: true
  path: ./nested/apps
  sourceRef: {kind: GitRepository, name: flux-system}
  namePrefix: n-
  commonMetadata: {labels: {owner: platform}}
  patches:
  - target: {kind: ConfigMap, name: settings}
    patch: |-
      - {op: add, path: /data/patched, value: "yes"}
  postBuild:
    substitute: {cluster_name: "${cluster}"}
    substituteFrom: [{kind: ConfigMap, name: nested-vars}]
`,
	"nested/apps/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nnamespace: default\nresources: [settings.yaml, extra.yaml, web.yaml]\n",
	// Its image is the upstream's (addNestedLayer): fleetgen pins it through
	// a patch of the layer's Kustomization on nested-apps' spec.images.
	"nested/apps/web.yaml": `apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 1
  selector: {matchLabels: {app: nested-web}}
  template:
    metadata: {labels: {app: nested-web}}
    spec:
      containers:
      - {name: web, image: "%BUSYBOX%"}
`,
	"nested/apps/settings.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\ndata: {cluster: \"${cluster_name}\", tier: \"${tier}\", region: \"${region:=none}\"}\n",
	"nested/apps/extra.yaml":    "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: extra}\ndata: {plain: x}\n",
}

// addNestedLayer writes the layer into the example and selects it for
// every cluster.
func addNestedLayer(t *testing.T, ex *example) {
	t.Helper()
	// The upstream busybox the quickstart's podinfo runs (quickstart()).
	podinfo, err := os.ReadFile(filepath.Join(ex.dir, "apps", "base", "podinfo.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	busybox := ""
	for _, l := range strings.Split(string(podinfo), "\n") {
		if _, ref, ok := strings.Cut(l, "image: "); ok && strings.HasSuffix(ref, "/library/busybox:1.36") {
			busybox = strings.TrimSpace(ref)
		}
	}
	if busybox == "" {
		t.Fatal("apps/base/podinfo.yaml runs no upstream busybox")
	}
	for p, d := range nestedFiles {
		write(t, filepath.Join(ex.dir, filepath.FromSlash(p)), []byte(strings.ReplaceAll(d, "%BUSYBOX%", busybox)))
	}
	testenv.ReplaceIn(t, ex.cfg.File, "  groups:\n", "    - name: "+nestedLayer+"\n      path: ./"+nestedLayer+"\n  groups:\n")
}

// nestedMatches is assertion 8: the Kustomization the nested layer applies
// reconciles, its inventory is exactly the objects the model's closure has
// for it, and each is live as the model has it.
func nestedMatches(ctx context.Context, c *cluster, ex *example) (int, error) {
	ld, err := pipeline.Load(ctx, ex.cfg)
	if err != nil {
		return 0, err
	}
	var set *layers.Set
	for _, s := range ld.Model.Closure(c.name, nestedLayer) {
		if s.Kustomization == "flux-system/"+nestedKustomization {
			set = s
		}
	}
	if set == nil || set.Objects == nil {
		return 0, fmt.Errorf("the model's closure of layer %s for %s has no Kustomization %s", nestedLayer, c.name, nestedKustomization)
	}
	var want []string
	for _, o := range set.Objects {
		want = append(want, o.Namespace+"_"+o.Name+"_"+groupOf(o.APIVersion)+"_"+o.Kind)
	}
	sort.Strings(want)
	err = eventually(3*time.Minute, func() error {
		inv, err := inventory(ctx, c, nestedKustomization)
		if err != nil {
			return err
		}
		if strings.Join(inv, " ") != strings.Join(want, " ") {
			return fmt.Errorf("kustomize-controller applied %v, the model has %v", inv, want)
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	// The model builds nested-apps as the layer writes it: fleetgen's patch
	// of its spec.images is not in it. Live, every container runs the mirror
	// by digest, in the Deployment and in the Pod its ReplicaSet makes.
	objs, pins, err := pinnedAsLock(ex, set.Objects)
	if err != nil {
		return 0, err
	}
	if pins == 0 {
		return 0, fmt.Errorf("Kustomization %s applies no container", nestedKustomization)
	}
	if err := liveAsModel(ctx, c, objs); err != nil {
		return 0, err
	}
	return len(set.Objects), eventually(2*time.Minute, func() error { return podsPinned(ctx, c, objs) })
}

// pinnedAsLock returns objs with every container image rewritten to its
// mirror repository by the lock's digest, and how many it rewrote.
func pinnedAsLock(ex *example, objs []*layers.Object) ([]*layers.Object, int, error) {
	l, err := lock.Load(filepath.Join(ex.dir, lock.FileName))
	if err != nil {
		return nil, 0, err
	}
	var out []*layers.Object
	n := 0
	for _, o := range objs {
		cs := workload.Containers(o.Map())
		if len(cs) == 0 {
			out = append(out, o)
			continue
		}
		b, _ := json.Marshal(o.Map())
		m := map[string]any{}
		if err := json.Unmarshal(b, &m); err != nil {
			return nil, 0, err
		}
		podSpec, _, _ := unstructured.NestedMap(m, "spec", "template", "spec")
		list, _, _ := unstructured.NestedSlice(podSpec, "containers")
		for _, ci := range list {
			c := ci.(map[string]any)
			ref, err := lock.Normalize(c["image"].(string))
			if err != nil {
				return nil, 0, err
			}
			img, ok := l.Image(ref)
			if !ok {
				return nil, 0, fmt.Errorf("%s: the lock lacks its image", o.Describe())
			}
			c["image"] = img.Repository() + "@" + img.Digest
			n++
		}
		_ = unstructured.SetNestedSlice(m, list, "spec", "template", "spec", "containers")
		p, err := layers.NewObject(m, o.Origin)
		if err != nil {
			return nil, 0, err
		}
		out = append(out, p)
	}
	return out, n, nil
}

// podsPinned checks that each Deployment of objs has a Pod on c (made by
// kube-controller-manager's deployment and replicaset controllers) whose
// containers run the images objs have.
func podsPinned(ctx context.Context, c *cluster, objs []*layers.Object) error {
	pods, err := c.list(ctx, schema.GroupVersionKind{Version: "v1", Kind: "Pod"}, "")
	if err != nil {
		return err
	}
	for _, o := range objs {
		if o.Kind != "Deployment" {
			continue
		}
		labels, _, _ := unstructured.NestedStringMap(o.Map(), "spec", "template", "metadata", "labels")
		want := workload.Containers(o.Map())
		found := false
		for _, p := range pods {
			if p.GetNamespace() != o.Namespace || !matches(labels, p.GetLabels()) {
				continue
			}
			found = true
			cs, _, _ := unstructured.NestedSlice(p.Object, "spec", "containers")
			if len(cs) != len(want) {
				return fmt.Errorf("Pod %s/%s has %d containers, want %d", p.GetNamespace(), p.GetName(), len(cs), len(want))
			}
			for i, ci := range cs {
				if img, _ := ci.(map[string]any)["image"].(string); img != want[i].Image {
					return fmt.Errorf("Pod %s/%s runs %s, want %s", p.GetNamespace(), p.GetName(), img, want[i].Image)
				}
			}
		}
		if !found {
			return fmt.Errorf("%s has no Pod yet", o.Describe())
		}
	}
	return nil
}

func matches(sel, labels map[string]string) bool {
	for k, v := range sel {
		if labels[k] != v {
			return false
		}
	}
	return true
}

func groupOf(apiVersion string) string {
	g, _, ok := strings.Cut(apiVersion, "/")
	if !ok {
		return ""
	}
	return g
}

// liveAsModel checks that each object of the model is live on c with the
// model's fields (the live object may hold more: defaults, Flux's labels).
func liveAsModel(ctx context.Context, c *cluster, objs []*layers.Object) error {
	for _, o := range objs {
		gv, err := schema.ParseGroupVersion(o.APIVersion)
		if err != nil {
			return err
		}
		live, err := c.get(ctx, gv.WithKind(o.Kind), o.Namespace, o.Name)
		if err != nil {
			return err
		}
		if live == nil {
			return fmt.Errorf("%s is in the model, not on %s", o.Describe(), c.name)
		}
		want := map[string]any{}
		for k, v := range o.Map() {
			if k != "metadata" {
				want[k] = v
			}
		}
		md, _ := o.Map()["metadata"].(map[string]any)
		for _, k := range []string{"name", "namespace", "labels", "annotations"} {
			if v, ok := md[k]; ok {
				want["metadata"] = mergeField(want["metadata"], k, v)
			}
		}
		if err := subset(o.Describe(), want, live.Object); err != nil {
			return err
		}
	}
	return nil
}

// ownDelivery is a delivery from the fleet's own repository, its URL spelled
// otherwise than spec.source.url, whose bundle the published source holds.
// Its fleet.yaml repeats the targets as targetCustomizations that name them
// (defaultNamespace own-<target>), so that the BundleDeployments say which
// target Fleet matched, as for the other deliveries.
const ownDelivery = "own"

// ownChart is the own delivery's bundle that is a Helm chart, ownWeb the one
// whose chart `fleet apply` downloads from an HTTP chart repository (the
// chart web of addHelmLayer), ownOCI the one whose chart it pulls from an
// OCI registry (addHelmLayer's chart hello in the upstream registry).
const (
	ownChart = "bundles/own-chart"
	ownWeb   = "bundles/own-web"
	ownOCI   = "bundles/own-oci"
)

var ownFiles = map[string]string{
	// A Helm chart of the bundle's own folder, which Fleet's agent installs
	// with Helm: its release named after the bundle, values merged from the
	// options, the target's customization and a cluster label.
	ownChart + "/Chart.yaml":  "apiVersion: v2\nname: own-chart\nversion: 0.1.0\n",
	ownChart + "/values.yaml": "greeting: hello\nregion: none\ntarget: none\nwho: nobody\nzone: none\nlive: {}\nannotations: {}\n",
	ownChart + "/templates/configmap.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-settings
  labels: {app.kubernetes.io/instance: {{ .Release.Name | quote }}}
data:
  greeting: {{ .Values.greeting | quote }}
  region: {{ .Values.region | quote }}
  target: {{ .Values.target | quote }}
  namespace: {{ .Release.Namespace | quote }}
  kube: {{ .Capabilities.KubeVersion.Major | quote }}
  who: {{ .Values.who | quote }}
  zone: {{ .Values.zone | quote }}
  live: {{ toJson .Values.live | quote }}
  annotations: {{ toJson .Values.annotations | quote }}
`,
	// Go templates, not YAML: checked through what they render, never read
	// as YAML (this one renders nothing here).
	ownChart + "/templates/secret.yaml": "{{- if .Values.token }}\napiVersion: v1\nkind: Secret\nmetadata: {name: {{ .Release.Name }}-token}\nstringData: {token: {{ .Values.token | quote }}}\n{{- end }}\n",
	// Fleet runs kustomize over what Helm renders.
	ownChart + "/kustomization.yaml": `labels:
  - pairs: {team: own}
patches:
  - target: {kind: ConfigMap}
    patch: |-
      - op: replace
        path: /data/greeting
        value: kustomized
`,
	ownChart + "/fleet.yaml": `defaultNamespace: own
helm:
  values:
    greeting: hi
    region: global.fleet.clusterLabels.region
    who: ${ .ClusterName }.${ .ClusterNamespace }.${ get .ClusterLabels "env" | upper }
    live: ${ toJson .ClusterLabels }
    annotations: ${ toJson .ClusterAnnotations }
  templateValues:
    zone: ${ .ClusterLabels.region }-1
targetCustomizations:
- {name: prod, clusterGroup: production, defaultNamespace: own-prod, helm: {values: {target: prod}}}
- {name: us, clusterSelector: {matchLabels: {region: us}}, defaultNamespace: own-us, helm: {values: {target: us}}}
`,
	"bundles/own/configmap.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: own}\ndata: {delivery: own}\n",
	"bundles/own/fleet.yaml": `defaultNamespace: own
targetCustomizations:
- {name: prod, clusterGroup: production, defaultNamespace: own-prod}
- {name: us, clusterSelector: {matchLabels: {region: us}}, defaultNamespace: own-us}
`,
}

// addOwnDelivery writes the bundle and adds the delivery, its repo the
// example's Git URL with a doubled slash, a trailing slash and no .git.
func addOwnDelivery(t *testing.T, ex *example) {
	t.Helper()
	for p, d := range ownFiles {
		write(t, filepath.Join(ex.dir, filepath.FromSlash(p)), []byte(d))
	}
	scheme, rest, _ := strings.Cut(ex.gitURL, "://")
	host, path, _ := strings.Cut(rest, "/")
	repo := scheme + "://" + host + "//" + strings.TrimSuffix(path, ".git") + "/"
	if !fleetschema.SameRepo(repo, ex.gitURL) || repo == ex.gitURL {
		t.Fatalf("%s does not spell %s otherwise", repo, ex.gitURL)
	}
	testenv.ReplaceIn(t, ex.cfg.File, "  deliveries:\n", `  deliveries:
    - name: `+ownDelivery+`
      repo: "`+repo+`"
      branch: main
      paths: [bundles/own, `+ownChart+`, `+ownWeb+`, `+ownOCI+`]
      targets:
        - {name: prod, clusterGroup: production}
        - {name: us, clusterSelector: {region: us}}
`)
}

// ownRepo reports whether the GitRepo's repo is the example's own source.
func ownRepo(ex *example, repo string) bool { return fleetschema.SameRepo(repo, ex.gitURL) }

// modelDelivered returns, per cluster, whether the model has the own
// delivery's bundle reaching it.
func modelDelivered(ctx context.Context, ex *example) (map[string]bool, error) {
	ld, err := pipeline.Load(ctx, ex.cfg)
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for _, c := range ld.Fleet.Spec.Clusters {
		for _, s := range ld.Model.Delivered(c.Name) {
			if s.Delivery == ownDelivery && len(s.Objects) > 0 {
				out[c.Name] = true
			}
		}
	}
	return out, nil
}

// modelBundle returns the objects fleetgen's model has cluster receive from
// the own delivery's bundle in folder dir.
func modelBundle(ctx context.Context, ex *example, cluster, dir string) ([]*layers.Object, error) {
	ld, err := pipeline.Load(ctx, ex.cfg)
	if err != nil {
		return nil, err
	}
	var out []*layers.Object
	for _, s := range ld.Model.Delivered(cluster) {
		if s.Delivery == ownDelivery && s.Path == dir {
			out = append(out, s.Objects...)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("the model has no object of %s for %s", dir, cluster)
	}
	return out, nil
}
