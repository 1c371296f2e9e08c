package e2e_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"
)

var (
	fleetClusterGVK      = schema.GroupVersionKind{Group: "fleet.cattle.io", Version: "v1alpha1", Kind: "Cluster"}
	fleetRegistrationGVK = schema.GroupVersionKind{Group: "fleet.cattle.io", Version: "v1alpha1", Kind: "ClusterRegistration"}
	fleetTokenGVK        = schema.GroupVersionKind{Group: "fleet.cattle.io", Version: "v1alpha1", Kind: "ClusterRegistrationToken"}
	deploymentGVK        = schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}
)

// fleetSystemNS is where Fleet's controller and agents run.
const fleetSystemNS = "cattle-fleet-system"

// startFleetController runs fleet-controller and its agent management (the
// two containers of the fleet chart's Deployment that registration needs) as
// local processes against the manager, with the arguments and environment
// the chart of the same release gives them and the chart's fleet-controller
// ConfigMap, pointing agents at the manager's API server.
//
// The processes run until life ends.
func startFleetController(t, life *testing.T, ctx context.Context, tools, logs string, mgr *cluster) {
	t.Helper()
	manifests, err := helmTemplate(t, tools, filepath.Join(tools, "charts", "fleet"), []string{
		"apiServerURL=" + mgr.url,
		// The manager registers no agent for itself ("local"): that would be
		// a fleet-agent Deployment on the manager, which needs a kubelet.
		"bootstrap.enabled=false",
		"metrics.enabled=false",
	}, []byte("apiServerCA: "+strconv.Quote(string(mgr.caPEM))+"\n"+shardValues))
	if err != nil {
		t.Fatal(err)
	}
	var cm, dep *unstructured.Unstructured
	sharded := map[string]*unstructured.Unstructured{} // shard ID -> its Deployment
	for _, obj := range decodeObjects(t, manifests) {
		switch {
		case obj.GetKind() == "ConfigMap" && obj.GetName() == "fleet-controller":
			cm = obj
		case obj.GetKind() == "Deployment" && obj.GetName() == "fleet-controller":
			dep = obj
		case obj.GetKind() == "Deployment" && strings.HasPrefix(obj.GetName(), "fleet-controller-shard-"):
			sharded[strings.TrimPrefix(obj.GetName(), "fleet-controller-shard-")] = obj
		}
	}
	for _, id := range fleetShards {
		if sharded[id] == nil {
			t.Fatalf("the fleet chart rendered no Deployment fleet-controller-shard-%s for shards[].id %s", id, id)
		}
	}
	if cm == nil || dep == nil {
		t.Fatal("the fleet chart rendered no fleet-controller ConfigMap or Deployment")
	}
	dep.SetNamespace(fleetSystemNS)
	cmYAML, err := yaml.Marshal(cm.Object)
	if err != nil {
		t.Fatal(err)
	}
	ns := fmt.Sprintf("apiVersion: v1\nkind: Namespace\nmetadata: {name: %s}\n---\n", fleetSystemNS)
	if err := mgr.applyIn(ctx, fleetSystemNS, append([]byte(ns), cmYAML...)); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(tools, "bin", "fleetcontroller")
	for _, name := range []string{"fleet-controller", "fleet-agentmanagement"} {
		env, err := containerEnv(dep, name)
		if err != nil {
			t.Fatal(err)
		}
		args, err := containerArgs(dep, name, "fleetcontroller")
		if err != nil {
			t.Fatal(err)
		}
		env = append(env, "KUBECONFIG="+mgr.kubeconfig,
			fmt.Sprintf("FLEET_METRICS_BIND_ADDRESS=127.0.0.1:%d", freePort(t)),
			fmt.Sprintf("FLEET_HEALTHPROBE_BIND_ADDRESS=127.0.0.1:%d", freePort(t)))
		startFor(t, life, logs, name, bin, env, args...)
	}
	// One fleet-controller per shard, as the chart deploys it: the same
	// container with --shard-id (and no agent management, which only the
	// unsharded Deployment runs), with its metrics on.
	for _, id := range fleetShards {
		d := sharded[id]
		d.SetNamespace(fleetSystemNS)
		env, err := containerEnv(d, "fleet-controller")
		if err != nil {
			t.Fatal(err)
		}
		args, err := containerArgs(d, "fleet-controller", "fleetcontroller")
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(args, "--shard-id") {
			t.Fatalf("Deployment %s runs fleetcontroller %v, without --shard-id", d.GetName(), args)
		}
		// Its metrics name every Cluster it reconciles (assertion 9).
		args = slices.DeleteFunc(args, func(a string) bool { return a == "--disable-metrics" })
		shardMetrics[id] = fmt.Sprintf("127.0.0.1:%d", freePort(t))
		env = append(env, "KUBECONFIG="+mgr.kubeconfig,
			"FLEET_METRICS_BIND_ADDRESS="+shardMetrics[id],
			fmt.Sprintf("FLEET_HEALTHPROBE_BIND_ADDRESS=127.0.0.1:%d", freePort(t)))
		startFor(t, life, logs, d.GetName(), bin, env, args...)
	}
}

// startAgent runs fleet-agent as a local process on the downstream cluster c,
// as the fleet-agent Deployment applied there would run it: with that
// container's environment (the chart's leader-election settings among it),
// until life ends.
func startAgent(t, life *testing.T, tools, logs string, c *cluster, dep *unstructured.Unstructured) {
	t.Helper()
	env, err := containerEnv(dep, "fleet-agent")
	if err != nil {
		t.Fatalf("%s: %v", c.name, err)
	}
	startFor(t, life, logs, c.name+"-fleet-agent", filepath.Join(tools, "bin", "fleetagent"), append(env,
		"KUBECONFIG="+c.kubeconfig,
		fmt.Sprintf("FLEET_AGENT_METRICS_BIND_ADDRESS=127.0.0.1:%d", freePort(t)),
		fmt.Sprintf("FLEET_AGENT_PROBE_BIND_ADDRESS=127.0.0.1:%d", freePort(t)),
		"FLEET_AGENT_PPROF_DISABLED=true",
	))
}

// containerEnv is the environment of the named container of a Deployment, as
// the kubelet would set it: plain values, and the namespace for a fieldRef
// to metadata.namespace (the only reference the agent's Deployment holds).
func containerEnv(dep *unstructured.Unstructured, name string) ([]string, error) {
	cm, err := container(dep, name)
	if err != nil {
		return nil, err
	}
	env, _, _ := unstructured.NestedSlice(cm, "env")
	var out []string
	for _, e := range env {
		em, _ := e.(map[string]any)
		n, _ := em["name"].(string)
		if em["valueFrom"] == nil { // value, or empty when left out
			v, _ := em["value"].(string)
			out = append(out, n+"="+v)
			continue
		}
		ref, _, _ := unstructured.NestedString(em, "valueFrom", "fieldRef", "fieldPath")
		if ref != "metadata.namespace" {
			return nil, fmt.Errorf("Deployment %s: env %s: unsupported reference %v", dep.GetName(), n, em["valueFrom"])
		}
		out = append(out, n+"="+dep.GetNamespace())
	}
	return out, nil
}

// containerArgs are the arguments of the named container of a Deployment,
// checked to run command.
func containerArgs(dep *unstructured.Unstructured, name, command string) ([]string, error) {
	cm, err := container(dep, name)
	if err != nil {
		return nil, err
	}
	cmd, _, _ := unstructured.NestedStringSlice(cm, "command")
	if len(cmd) != 1 || cmd[0] != command {
		return nil, fmt.Errorf("Deployment %s: container %s runs %v, not %s", dep.GetName(), name, cmd, command)
	}
	args, _, _ := unstructured.NestedStringSlice(cm, "args")
	return args, nil
}

// container is the named container of a Deployment.
func container(dep *unstructured.Unstructured, name string) (map[string]any, error) {
	cs, _, _ := unstructured.NestedSlice(dep.Object, "spec", "template", "spec", "containers")
	for _, c := range cs {
		if cm, _ := c.(map[string]any); cm["name"] == name {
			return cm, nil
		}
	}
	return nil, fmt.Errorf("Deployment %s has no container %s", dep.GetName(), name)
}

// mintedValues waits for fleet-controller to mint the Secret <cluster>-token
// (key values) for the rendered ClusterRegistrationToken and checks it.
func mintedValues(ctx context.Context, mgr *cluster, cluster string) ([]byte, error) {
	var values []byte
	err := eventually(2*time.Minute, func() error {
		s, err := mgr.get(ctx, secretGVK, fleetNS, cluster+"-token")
		if err != nil {
			return err
		}
		if s == nil {
			return fmt.Errorf("Secret %s/%s-token not minted", fleetNS, cluster)
		}
		v, _, _ := unstructured.NestedString(s.Object, "data", "values")
		values, err = base64.StdEncoding.DecodeString(v)
		if err != nil {
			return err
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := yaml.Unmarshal(values, &m); err != nil {
		return nil, err
	}
	for k, want := range map[string]string{"tokenName": cluster + "-token", "clusterNamespace": fleetNS, "apiServerURL": mgr.url} {
		if m[k] != want {
			return nil, fmt.Errorf("minted values: %s is %v, want %s", k, m[k], want)
		}
	}
	if tok, _ := m["token"].(string); tok == "" {
		return nil, fmt.Errorf("minted values hold no token")
	}
	return values, nil
}

// helmTemplate renders a chart the way `helm install --namespace
// cattle-fleet-system` would: the --set values, then the values files in
// order (for the fleet-agent chart, the minted values, then fleetgen's
// agents/<c>/values.yaml).
func helmTemplate(t *testing.T, tools, chart string, set []string, values ...[]byte) ([]byte, error) {
	t.Helper()
	args := []string{"template", filepath.Base(chart), chart, "--namespace", fleetSystemNS}
	for _, s := range set {
		args = append(args, "--set", s)
	}
	for i, v := range values {
		p := filepath.Join(t.TempDir(), fmt.Sprintf("values-%d.yaml", i))
		write(t, p, v)
		args = append(args, "--values", p)
	}
	cmd := exec.Command(filepath.Join(tools, "bin", "helm"), args...)
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+t.TempDir(), "HELM_CONFIG_HOME="+t.TempDir(), "HELM_DATA_HOME="+t.TempDir())
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("helm template: %w: %s", err, stderr.String())
	}
	return out, nil
}

// registered waits until the agent of the cluster with clientID registered
// with the pre-defined Cluster name: a granted ClusterRegistration naming it,
// and the agent checking in on its status.
func registered(ctx context.Context, mgr *cluster, name string, timeout time.Duration) (string, error) {
	var got string
	err := eventually(timeout, func() error {
		c, err := mgr.get(ctx, fleetClusterGVK, fleetNS, name)
		if err != nil {
			return err
		}
		if c == nil {
			return fmt.Errorf("Cluster %s/%s is gone", fleetNS, name)
		}
		clientID, _, _ := unstructured.NestedString(c.Object, "spec", "clientID")
		if clientID == "" {
			return fmt.Errorf("Cluster %s has no spec.clientID", name)
		}
		regs, err := mgr.list(ctx, fleetRegistrationGVK, fleetNS)
		if err != nil {
			return err
		}
		granted := false
		for _, r := range regs {
			id, _, _ := unstructured.NestedString(r.Object, "spec", "clientID")
			cn, _, _ := unstructured.NestedString(r.Object, "status", "clusterName")
			ok, _, _ := unstructured.NestedBool(r.Object, "status", "granted")
			if id == clientID && ok {
				if cn != name {
					return fmt.Errorf("ClusterRegistration %s for clientID %s names Cluster %q, want %s", r.GetName(), clientID, cn, name)
				}
				granted = true
			}
		}
		if !granted {
			return fmt.Errorf("no granted ClusterRegistration for Cluster %s (clientID %s)", name, clientID)
		}
		seen, _, _ := unstructured.NestedString(c.Object, "status", "agent", "lastSeen")
		if seen == "" {
			return fmt.Errorf("the agent of Cluster %s has not checked in", name)
		}
		got = fmt.Sprintf("registered as Cluster %s/%s (clientID %s), agent last seen %s", fleetNS, name, clientID, seen)
		return nil
	})
	return got, err
}

// fleetRegistration is assertion 4: the token minted for every agent cluster,
// an agent cluster registered from the real chart, a manager-mode cluster
// imported from its decrypted kubeconfig Secret.
func fleetRegistration(t, parent *testing.T, ctx context.Context, s *summary, tools, logs string, mgr, edge, imported *cluster, ex *example) {

	agents, err := filepath.Glob(filepath.Join(ex.out, "agents", "*", "values.yaml"))
	if err != nil || len(agents) == 0 {
		t.Fatalf("no agents/<c>/values.yaml rendered: %v", err)
	}
	var edgeValues []byte
	for _, a := range agents {
		name := filepath.Base(filepath.Dir(a))
		v, err := mintedValues(ctx, mgr, name)
		if err != nil {
			s.fail("4 token minted", "%s: %v", name, err)
			continue
		}
		s.pass("4 token minted", "Secret %s/%s-token holds the agent values and a token", fleetNS, name)
		if name == edge.name {
			edgeValues = v
		}
	}
	if edgeValues == nil {
		return
	}

	// The agent cluster installs the real chart from the two values files.
	fleetgenValues, err := os.ReadFile(filepath.Join(ex.out, "agents", edge.name, "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	manifests, err := helmTemplate(t, tools, "testdata/charts/fleet-agent", nil, edgeValues, fleetgenValues)
	if err != nil {
		s.fail("4 agent chart", "%v", err)
		return
	}
	ns := fmt.Sprintf("apiVersion: v1\nkind: Namespace\nmetadata: {name: %s}\n---\n", fleetSystemNS)
	if err := edge.applyIn(ctx, fleetSystemNS, append([]byte(ns), manifests...)); err != nil {
		s.fail("4 agent chart", "%v", err)
		return
	}
	dep, err := edge.get(ctx, deploymentGVK, fleetSystemNS, "fleet-agent")
	if err != nil || dep == nil {
		s.fail("4 agent chart", "no Deployment fleet-agent on %s: %v", edge.name, err)
		return
	}
	cs, _, _ := unstructured.NestedSlice(dep.Object, "spec", "template", "spec", "containers")
	image, _ := cs[0].(map[string]any)["image"].(string)
	if !strings.Contains(image, "@sha256:") || !strings.HasPrefix(image, ex.mirror+"/") {
		s.fail("4 agent chart", "fleet-agent image %s is not the mirror's by digest", image)
	} else {
		s.pass("4 agent chart", "fleet-agent chart v0.16 rendered from minted values + agents/%s/values.yaml, applied on %s, image %s", edge.name, edge.name, image)
	}
	// edge-1's agent runs to the end: it installs the own delivery's Helm
	// bundle (assertion 6).
	startAgent(t, parent, tools, logs, edge, dep)
	if got, err := registered(ctx, mgr, edge.name, 3*time.Minute); err != nil {
		s.fail("4 agent registers", "%v", err)
	} else {
		s.pass("4 agent registers", "%s: %s", edge.name, got)
	}

	// The manager-mode cluster: fleet-controller reads the decrypted
	// kubeconfig Secret and deploys the agent there (a Deployment no kubelet
	// runs); the agent binary runs in its place.
	var importedDep *unstructured.Unstructured
	err = eventually(2*time.Minute, func() error {
		b, err := imported.get(ctx, secretGVK, fleetSystemNS, "fleet-agent-bootstrap")
		if err != nil {
			return err
		}
		d, err := imported.get(ctx, deploymentGVK, fleetSystemNS, "fleet-agent")
		if err != nil {
			return err
		}
		if b == nil || d == nil {
			return fmt.Errorf("fleet-controller has not imported %s (bootstrap Secret %v, Deployment %v)", imported.name, b != nil, d != nil)
		}
		importedDep = d
		return nil
	})
	if err != nil {
		s.fail("4 manager import", "%v", err)
		return
	}
	s.pass("4 manager import", "fleet-controller reached %s through its decrypted kubeconfig Secret and deployed the agent bootstrap", imported.name)
	startAgent(t, t, tools, logs, imported, importedDep)
	if got, err := registered(ctx, mgr, imported.name, 3*time.Minute); err != nil {
		s.fail("4 import registers", "%v", err)
	} else {
		s.pass("4 import registers", "%s: %s", imported.name, got)
	}
}
