package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"fleetgen.dev/fleetgen/pkg/layers"
	"fleetgen.dev/fleetgen/pkg/pipeline"
	"fleetgen.dev/fleetgen/test/testenv"
)

var (
	gitRepoGVK          = schema.GroupVersionKind{Group: "fleet.cattle.io", Version: "v1alpha1", Kind: "GitRepo"}
	bundleGVK           = schema.GroupVersionKind{Group: "fleet.cattle.io", Version: "v1alpha1", Kind: "Bundle"}
	bundleDeploymentGVK = schema.GroupVersionKind{Group: "fleet.cattle.io", Version: "v1alpha1", Kind: "BundleDeployment"}
)

// deliveriesYAML gives the test's quickstart two deliveries on which Fleet's
// AND and first match decide, over its Fleet clusters edge-1 (prod, eu),
// edge-2 (dev, us), prod-eu-1 (prod, eu), dev-us-1 (dev, us) and capi-1
// (dev, eu), groups production (env=prod) and development (env=dev):
//
//   - monitoring: capi-1 is in eu but not production, so prod-eu (AND)
//     leaves it to eu; edge-1 and prod-eu-1 match prod-eu and eu, and the
//     first wins;
//   - security: eu-dev names capi-1 AND production (nothing), none sets no
//     criterion (nothing), dev-us takes edge-2 and dev-us-1. Read as OR,
//     the first two would reach every cluster.
//
// And Argo CD for prod-eu-1, whose kubeconfig is the test cluster's.
const deliveriesYAML = `  deliveries:
    - name: monitoring
      repo: https://git.quickstart.example/platform/monitoring.git
      branch: main
      bundles: [{base: monitoring, options: fleet-e2e.yaml}]
      targets:
        - {name: prod-eu, clusterGroup: production, clusterSelector: {region: eu}}
        - {name: eu, clusterSelector: {region: eu}}
        - {name: dev, clusterGroup: development}
      serviceAccount: fleet-monitoring
    - name: security
      repo: https://git.quickstart.example/platform/security.git
      branch: main
      paths: [policies]
      targets:
        - {name: eu-dev, clusterName: capi-1, clusterGroup: production}
        - {name: none}
        - {name: dev-us, clusterGroup: development, clusterSelector: {region: us}}
  argocd:
    selector: {argocd: enabled}
    auth:
      azureWorkloadIdentity: {clientID: 00000000-0000-0000-0000-0000000000a1}
`

// addDeliveries adds deliveriesYAML and the Fleet shards (shardsYAML,
// sharding_test.go) to the test's copy of the quickstart.
func addDeliveries(t *testing.T, fleetFile string) {
	t.Helper()
	testenv.ReplaceIn(t, fleetFile,
		"  defaults:\n", deliveriesYAML+shardsYAML+"  defaults:\n",
		"    - name: prod-eu-1\n      labels: {env: prod, region: eu}\n", "    - name: prod-eu-1\n      labels: {env: prod, region: eu, argocd: enabled}\n")
}

// deliveries is assertion 6: the real Fleet decides. For each GitRepo
// Flux applied on the manager, the test does what gitjob does after its
// clone (gitjob's Job cannot run without kubelets): `fleet apply` (Fleet's
// CLI of the same release) with the GitRepo's targets as targets and
// targetRestrictions, its labels, namespace and service account, over a
// checkout whose bundles repeat the GitRepo's targets as
// targetCustomizations that set defaultNamespace to <delivery>-<target>.
// fleet-controller then creates a BundleDeployment per cluster its matcher
// selects, and the customization Fleet's matcher picks first names the
// target. The assertion: for every delivery, BundleDeployments exist for
// exactly the clusters `fleetgen targets` lists, each with the target it
// names. Then a Bundle with a service account the rendered Policy does not
// admit gets none.
func deliveries(t *testing.T, ctx context.Context, s *summary, tools, logs string, mgr, edge *cluster, ex *example) {
	t.Helper()
	start := time.Now()
	reach, err := pipeline.Targets(ctx, ex.cfg, pipeline.TargetsOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]map[string]string{} // delivery -> cluster -> target
	for _, c := range reach.Clusters {
		for _, d := range c.Deliveries {
			if want[d.Name] == nil {
				want[d.Name] = map[string]string{}
			}
			want[d.Name][c.Name] = d.Target
		}
	}
	repos, err := mgr.list(ctx, gitRepoGVK, fleetNS)
	if err != nil || len(repos) == 0 {
		t.Fatalf("no GitRepo on the manager: %v", err)
	}
	var cpu time.Duration // what the fleet apply processes took
	for _, repo := range repos {
		took, err := fleetApply(t, ctx, tools, logs, mgr, &repo, ex)
		cpu += took
		if err != nil {
			s.fail("6 deliveries", "fleet apply %s: %v", repo.GetName(), err)
			return
		}
	}
	for _, repo := range repos {
		d := repo.GetName()
		var got map[string]string
		err := eventually(2*time.Minute, func() error {
			got, err = deployedTo(ctx, mgr, d)
			if err != nil {
				return err
			}
			if fmt.Sprint(got) != fmt.Sprint(want[d]) {
				return fmt.Errorf("BundleDeployments for %v, fleetgen targets lists %v", got, want[d])
			}
			return nil
		})
		if err != nil {
			s.fail("6 deliveries", "%s: %v", d, err)
			continue
		}
		s.pass("6 deliveries", "%s: fleet-controller deployed to exactly the %d clusters fleetgen targets lists, each by its target: %s", d, len(got), pairs(got))
		if d != ownDelivery {
			continue
		}
		// The own-repo bundle came from the published source: the model
		// has it reaching exactly those clusters (issue 39).
		model, err := modelDelivered(ctx, ex)
		if err != nil {
			s.fail("6 own bundle", "%v", err)
			continue
		}
		var deployed []string
		for c := range got {
			deployed = append(deployed, c)
		}
		var modelled []string
		for c := range model {
			modelled = append(modelled, c)
		}
		sort.Strings(deployed)
		sort.Strings(modelled)
		if strings.Join(deployed, " ") != strings.Join(modelled, " ") {
			s.fail("6 own bundle", "Fleet deployed the published bundles/own to %v, fleetgen's model has it for %v", deployed, modelled)
		} else {
			s.pass("6 own bundle", "bundles/own, from the published source, deployed to exactly the clusters fleetgen's model renders it for: %s", strings.Join(deployed, " "))
		}
		// The own Helm bundle as edge-1's fleet-agent installs it: every
		// object the model renders (Helm's engine, Fleet's release name,
		// namespace and values) live with the model's fields.
		for _, b := range []struct{ dir, what string }{
			{ownChart, "a Helm chart of the fleet's own repository"},
			{ownWeb, "a chart fleet apply downloaded from an HTTP chart repository, which fleetgen mirrored, locked and rendered from its cache"},
			{ownOCI, "a chart fleet apply pulled from an OCI registry, which fleetgen mirrored, locked and rendered from its cache"},
		} {
			objs, err := modelBundle(ctx, ex, edge.name, b.dir)
			if err == nil {
				err = eventually(2*time.Minute, func() error { return liveAsModel(ctx, edge, objs) })
			}
			if err == nil {
				err = sameData(ctx, edge, objs)
			}
			if err != nil {
				s.fail("6 own Helm bundle", "%s: %s: %v", edge.name, b.dir, err)
				continue
			}
			var names []string
			for _, o := range objs {
				names = append(names, o.Describe())
			}
			s.pass("6 own Helm bundle", "%s: fleet-agent installed %s (%s) as fleetgen's model renders it: %s", edge.name, b.dir, b.what, strings.Join(names, ", "))
		}
	}

	// The Policy: a Bundle with a service account it does not admit.
	dir := t.TempDir()
	write(t, filepath.Join(dir, "rogue", "configmap.yaml"), []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: rogue}\ndata: {a: b}\n"))
	targets := filepath.Join(dir, "targets.json")
	write(t, targets, []byte(`{"targets":[{"name":"all","clusterSelector":{}}],"targetRestrictions":[{"name":"all","clusterSelector":{}}]}`))
	took, err := runFleet(ctx, tools, logs, mgr, dir, "rogue", "apply", "--targets-file="+targets, "--label=fleet.cattle.io/repo-name=rogue",
		"--namespace", fleetNS, "--service-account", "intruder", "--", "rogue", "rogue")
	cpu += took
	if err != nil {
		s.fail("6 policy", "fleet apply rogue: %v", err)
		return
	}
	err = eventually(time.Minute, func() error {
		bs, err := bundlesOf(ctx, mgr, "rogue")
		if err != nil || len(bs) != 1 {
			return fmt.Errorf("Bundle of rogue: %d, %v", len(bs), err)
		}
		conds, _, _ := unstructured.NestedSlice(bs[0].Object, "status", "conditions")
		for _, c := range conds {
			if msg, _ := c.(map[string]any)["message"].(string); strings.Contains(msg, "disallowed serviceAccount intruder") {
				return nil
			}
		}
		return fmt.Errorf("Bundle %s has no Policy violation condition: %v", bs[0].GetName(), conds)
	})
	if err == nil {
		var got map[string]string
		if got, err = deployedTo(ctx, mgr, "rogue"); err == nil && len(got) > 0 {
			err = fmt.Errorf("deployed to %v", got)
		}
	}
	if err != nil {
		s.fail("6 policy", "%v", err)
	} else {
		s.pass("6 policy", "a Bundle with service account intruder, which the rendered Policy does not admit, is refused (disallowed serviceAccount) and deployed nowhere")
	}
	s.time("deliveries (fleet apply, BundleDeployments)", time.Since(start))
	s.time("deliveries: CPU of the fleet apply runs", cpu)
}

// fleetApply creates the Bundles of repo as gitjob would: a checkout of
// its paths or bundles (each folder an options file and a ConfigMap; for
// the fleet's own repository, a clone of what fleetgen published), the
// targets file gitjob's ConfigMap holds, and `fleet apply` with gitjob's
// arguments and environment (internal/cmd/controller/gitops/reconciler,
// v0.16).
func fleetApply(t *testing.T, ctx context.Context, tools, logs string, mgr *cluster, repo *unstructured.Unstructured, ex *example) (time.Duration, error) {
	t.Helper()
	name := repo.GetName()
	spec, _, _ := unstructured.NestedMap(repo.Object, "spec")
	targets, _, _ := unstructured.NestedSlice(spec, "targets")
	dir := filepath.Join(t.TempDir(), "source")
	if url, _ := spec["repo"].(string); ownRepo(ex, url) {
		testenv.Git(t, "", "clone", "--quiet", "--branch", "main", ex.repo, dir)
		return fleetApplyIn(t, ctx, tools, logs, mgr, repo, dir, false, nil)
	}

	// Each target again as a targetCustomization naming it.
	var custom []any
	for _, tg := range targets {
		m := map[string]any{}
		for k, v := range tg.(map[string]any) {
			m[k] = v
		}
		m["defaultNamespace"] = name + "-" + m["name"].(string)
		custom = append(custom, m)
	}
	options, err := yaml.Marshal(map[string]any{"defaultNamespace": name, "targetCustomizations": custom})
	if err != nil {
		return 0, err
	}
	bundle := func(folder, optionsFile string) {
		write(t, filepath.Join(dir, folder, optionsFile), options)
		write(t, filepath.Join(dir, folder, "configmap.yaml"), []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: "+name+"}\ndata: {delivery: "+name+"}\n"))
	}
	var paths []string
	driven := false
	if bs, ok, _ := unstructured.NestedSlice(spec, "bundles"); ok {
		driven = true
		for _, b := range bs {
			bm := b.(map[string]any)
			base, _ := bm["base"].(string)
			opt, _ := bm["options"].(string)
			p := base
			if opt == "" {
				bundle(base, "fleet.yaml")
			} else {
				bundle(path.Dir(path.Join(base, opt)), path.Base(opt))
				p += ":" + opt
			}
			paths = append(paths, p)
		}
	} else {
		ps, _, _ := unstructured.NestedStringSlice(spec, "paths")
		for _, p := range ps {
			bundle(p, "fleet.yaml")
		}
		paths = ps
	}

	return fleetApplyIn(t, ctx, tools, logs, mgr, repo, dir, driven, paths)
}

// fleetApplyIn runs `fleet apply` for repo over the checkout dir, of paths
// (nil: the GitRepo's own), a driven scan or not.
func fleetApplyIn(t *testing.T, ctx context.Context, tools, logs string, mgr *cluster, repo *unstructured.Unstructured, dir string, driven bool, paths []string) (time.Duration, error) {
	t.Helper()
	name := repo.GetName()
	spec, _, _ := unstructured.NestedMap(repo.Object, "spec")
	targets, _, _ := unstructured.NestedSlice(spec, "targets")
	if paths == nil {
		paths, _, _ = unstructured.NestedStringSlice(spec, "paths")
	}
	// gitjob's targets ConfigMap: the targets, and again as restrictions.
	tj, err := json.Marshal(map[string]any{"targets": targets, "targetRestrictions": targets})
	if err != nil {
		return 0, err
	}
	targetsFile := filepath.Join(t.TempDir(), "targets.yaml")
	write(t, targetsFile, tj)
	lbls := labels.Merge(repo.GetLabels(), labels.Set{"fleet.cattle.io/repo-name": name})
	sa, _, _ := unstructured.NestedString(spec, "serviceAccount")
	tns, _, _ := unstructured.NestedString(spec, "targetNamespace")
	paused, _, _ := unstructured.NestedBool(spec, "paused")
	args := []string{"apply", "--targets-file=" + targetsFile, "--label=" + lbls.String(), "--namespace", fleetNS,
		"--service-account", sa, "--sync-generation=0", fmt.Sprintf("--paused=%v", paused), "--target-namespace", tns,
		"--helm-basic-http"} // the test's OCI registry (bundles/own-oci) is plain HTTP
	if driven {
		args = append(args, "--driven-scan", "--driven-scan-sep", ":")
	}
	args = append(append(args, "--", name), paths...)
	return runFleet(ctx, tools, logs, mgr, dir, name, args...)
}

// runFleet runs Fleet's CLI in dir against the manager, with gitjob's
// environment, logging to logs/fleet-apply-<name>.log, and returns the CPU
// time it took.
func runFleet(ctx context.Context, tools, logs string, mgr *cluster, dir, name string, args ...string) (time.Duration, error) {
	log, err := os.Create(filepath.Join(logs, "fleet-apply-"+name+".log"))
	if err != nil {
		return 0, err
	}
	defer log.Close()
	cmd := exec.CommandContext(ctx, filepath.Join(tools, "bin", "fleet"), args...)
	cmd.Dir = dir
	home, err := os.MkdirTemp("", "fleet-home")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(home)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+mgr.kubeconfig, "HOME="+home, "FLEET_JSON_OUTPUT=true",
		"JOB_NAME="+name, "FLEET_APPLY_CONFLICT_RETRIES=1", "FLEET_BUNDLE_CREATION_MAX_CONCURRENCY=4",
		"OCI_STORAGE=false", "COMMIT=0123456789abcdef0123456789abcdef01234567")
	cmd.Stdout, cmd.Stderr = log, log
	err = cmd.Run()
	var cpu time.Duration
	if cmd.ProcessState != nil {
		cpu = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	}
	if err != nil {
		b, _ := os.ReadFile(log.Name())
		return cpu, fmt.Errorf("%w: %s", err, firstLine(lastLine(string(b))))
	}
	return cpu, nil
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}

// bundlesOf lists the Bundles fleet apply made for a GitRepo.
func bundlesOf(ctx context.Context, mgr *cluster, repo string) ([]unstructured.Unstructured, error) {
	all, err := mgr.list(ctx, bundleGVK, fleetNS)
	if err != nil {
		return nil, err
	}
	var out []unstructured.Unstructured
	for _, b := range all {
		if b.GetLabels()["fleet.cattle.io/repo-name"] == repo {
			out = append(out, b)
		}
	}
	return out, nil
}

// deployedTo returns, per cluster, the target that the BundleDeployments
// of repo's Bundles name (their defaultNamespace, <repo>-<target>); an
// error when one cluster got two different ones.
func deployedTo(ctx context.Context, mgr *cluster, repo string) (map[string]string, error) {
	bs, err := bundlesOf(ctx, mgr, repo)
	if err != nil {
		return nil, err
	}
	if len(bs) == 0 {
		return nil, fmt.Errorf("fleet apply made no Bundle")
	}
	clusters, err := mgr.list(ctx, fleetClusterGVK, fleetNS)
	if err != nil {
		return nil, err
	}
	byNS := map[string]string{}
	for _, c := range clusters {
		ns, _, _ := unstructured.NestedString(c.Object, "status", "namespace")
		byNS[ns] = c.GetName()
	}
	bds, err := mgr.list(ctx, bundleDeploymentGVK, "")
	if err != nil {
		return nil, err
	}
	got := map[string]string{}
	for _, b := range bs {
		for _, bd := range bds {
			if bd.GetLabels()["fleet.cattle.io/bundle-name"] != b.GetName() || bd.GetLabels()["fleet.cattle.io/bundle-namespace"] != fleetNS {
				continue
			}
			c, ok := byNS[bd.GetNamespace()]
			if !ok {
				return nil, fmt.Errorf("BundleDeployment %s/%s is in no Cluster's namespace", bd.GetNamespace(), bd.GetName())
			}
			ns, _, _ := unstructured.NestedString(bd.Object, "spec", "options", "defaultNamespace")
			target := strings.TrimPrefix(ns, repo+"-")
			if prev, dup := got[c]; dup && prev != target {
				return nil, fmt.Errorf("cluster %s got targets %s and %s", c, prev, target)
			}
			got[c] = target
		}
	}
	return got, nil
}

// pairs prints cluster=target pairs, sorted.
func pairs(m map[string]string) string {
	var out []string
	for k, v := range m {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return strings.Join(out, " ")
}

// sameData checks that each ConfigMap of objs is live with exactly the
// model's data: liveAsModel finds the model's fields live, and this finds
// none live that the model lacks (a key Fleet added that fleetgen did not).
func sameData(ctx context.Context, c *cluster, objs []*layers.Object) error {
	for _, o := range objs {
		if o.Kind != "ConfigMap" {
			continue
		}
		live, err := c.get(ctx, schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, o.Namespace, o.Name)
		if err != nil || live == nil {
			return fmt.Errorf("%s: not live: %v", o.Describe(), err)
		}
		got, _, _ := unstructured.NestedMap(live.Object, "data")
		want, _ := o.Map()["data"].(map[string]any)
		if fmt.Sprint(got) != fmt.Sprint(want) {
			return fmt.Errorf("%s: data live %v, the model has %v", o.Describe(), got, want)
		}
	}
	return nil
}
