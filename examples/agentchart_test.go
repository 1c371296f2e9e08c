package examples_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"fleetgen.dev/fleetgen/pkg/lock"
	"fleetgen.dev/fleetgen/pkg/pipeline"
	"fleetgen.dev/fleetgen/pkg/schema"
	"fleetgen.dev/fleetgen/test/crdcheck"
	"fleetgen.dev/fleetgen/test/testenv"
)

// agentChart is the fleet-agent chart of Fleet v0.16.1, copied unchanged
// (testdata/charts/SOURCES.md).
const agentChart = "testdata/charts/fleet-agent"

// The release name and namespace the chart's templates/validate.yaml demands.
const (
	agentRelease   = "fleet-agent"
	agentNamespace = "cattle-fleet-system"
)

// helmBinary returns the helm binary the chart tests run (testenv.Tool:
// $FLEETGEN_HELM, build.sh's pinned helm, or helm on PATH).
func helmBinary(t testing.TB) string {
	t.Helper()
	return testenv.Tool(t, "helm")
}

// helmTemplate renders the chart as `helm install fleet-agent <chart> -n
// cattle-fleet-system --values …` would, offline, and returns stdout, or the
// error with stderr.
func helmTemplate(t testing.TB, helm, release, namespace string, values ...string) ([]byte, error) {
	t.Helper()
	args := []string{"template", release, agentChart, "--namespace", namespace}
	for _, v := range values {
		args = append(args, "--values", v)
	}
	home := t.TempDir()
	cmd := exec.Command(helm, args...)
	cmd.Env = append(os.Environ(),
		"HELM_CACHE_HOME="+filepath.Join(home, "cache"),
		"HELM_CONFIG_HOME="+filepath.Join(home, "config"),
		"HELM_DATA_HOME="+filepath.Join(home, "data"),
	)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, &helmError{err: err, stderr: stderr.String()}
	}
	return stdout.Bytes(), nil
}

type helmError struct {
	err    error
	stderr string
}

func (e *helmError) Error() string { return e.err.Error() + ": " + strings.TrimSpace(e.stderr) }

// TestAgentChartInstall renders the real fleet-agent chart v0.16.1 for every
// agent cluster of every example, from agents/<cluster>/values.yaml plus what
// the Fleet controller mints into the Secret <cluster>-token (key values):
// once the token alone, once the whole minted set, given first as the
// install recipe in docs/agents.md does. The Deployment must run the mirror's
// fleet-agent pinned by digest, and fleetgen's values must reach the agent's
// bootstrap Secret and config.
func TestAgentChartInstall(t *testing.T) {
	helm := helmBinary(t)
	ctx := context.Background()
	clusters := 0
	for _, name := range examples(t) {
		dir := copyDir(t, name)
		cfg, ro := pipeline.Config{File: filepath.Join(dir, "fleet.yaml")}, pipeline.RenderOptions{OutDir: filepath.Join(dir, "out")}
		if err := pipeline.Render(ctx, cfg, ro); err != nil {
			t.Fatalf("%s: render: %v", name, err)
		}
		f, err := schema.Load(cfg.File, schema.LoadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		l, err := lock.Load(filepath.Join(dir, lock.FileName))
		if err != nil {
			t.Fatal(err)
		}
		var wantImage string
		if i, ok := f.AgentImage(); ok {
			n, err := lock.Normalize(f.Spec.Images[i])
			if err != nil {
				t.Fatal(err)
			}
			img, ok := l.Image(n)
			if !ok {
				t.Fatalf("%s: the lock lacks %s", name, n)
			}
			_, tag := lock.SplitRef(img.Target)
			wantImage = img.Repository() + ":" + tag + "@" + img.Digest
		}
		for _, c := range f.Spec.Clusters {
			if c.Registration.Mode != schema.ModeAgent {
				continue
			}
			clusters++
			values := filepath.Join(ro.OutDir, "agents", c.Name, "values.yaml")
			clientID := c.Registration.ClientID
			if clientID == "auto" {
				clientID, _ = l.ClientID(c.Name)
			}
			t.Run(name+"/"+c.Name, func(t *testing.T) {
				t.Parallel()
				tokenOnly := writeYAML(t, "token.yaml", map[string]any{"token": "minted-token-for-tests"})
				// What Fleet's clusterregistrationtoken handler mints: the
				// controller's own view of the API server, which fleetgen's
				// values (given last) override.
				minted := writeYAML(t, "minted.yaml", map[string]any{
					"clusterNamespace":            f.Spec.Manager.Namespace,
					"apiServerURL":                "https://controller-config.invalid:6443",
					"apiServerCA":                 "",
					"token":                       "minted-token-for-tests",
					"systemRegistrationNamespace": "cattle-fleet-clusters-system",
					"tokenName":                   c.Name + "-token",
				})
				for _, mintedFile := range []string{tokenOnly, minted} {
					out, err := helmTemplate(t, helm, agentRelease, agentNamespace, mintedFile, values)
					if err != nil {
						t.Fatalf("helm template with %s: %v", filepath.Base(mintedFile), err)
					}
					checkAgentManifests(t, out, f, c.Name, clientID, wantImage)
					checkAgentScheduling(t, out, &c)
				}
				// The chart refuses what fleetgen's values alone leave out
				// (the token aside) and the wrong place: the checks above
				// could fail.
				if _, err := helmTemplate(t, helm, agentRelease, agentNamespace, tokenOnly); err == nil || !strings.Contains(err.Error(), "apiServerURL is required") {
					t.Errorf("helm template without agents/%s/values.yaml = %v, want apiServerURL is required", c.Name, err)
				}
				if _, err := helmTemplate(t, helm, agentRelease, "default", tokenOnly, values); err == nil || !strings.Contains(err.Error(), "must be installed in the cattle-fleet-system namespace") {
					t.Errorf("helm template in namespace default = %v, want the chart to refuse", err)
				}
			})
		}
	}
	if clusters < 3 {
		t.Errorf("rendered the chart for %d agent clusters, want the examples' 3 or more", clusters)
	}
}

// checkAgentManifests checks what helm rendered for cluster: the fleet-agent
// Deployment's image, the bootstrap Secret and the agent config.
func checkAgentManifests(t testing.TB, out []byte, f *schema.Fleet, cluster, clientID, wantImage string) {
	t.Helper()
	var image string
	var secretData map[string]string
	var config string
	for _, doc := range crdcheck.SplitDocuments(out) {
		var obj struct {
			Kind     string `json:"kind"`
			Metadata struct {
				Name string `json:"name"`
			} `json:"metadata"`
			Data map[string]string `json:"data"`
			Spec struct {
				Template struct {
					Spec struct {
						Containers []struct {
							Name  string `json:"name"`
							Image string `json:"image"`
						} `json:"containers"`
					} `json:"spec"`
				} `json:"template"`
			} `json:"spec"`
		}
		if err := yaml.Unmarshal(doc, &obj); err != nil {
			t.Fatalf("helm output: %v", err)
		}
		switch {
		case obj.Kind == "Deployment" && obj.Metadata.Name == "fleet-agent":
			for _, ctr := range obj.Spec.Template.Spec.Containers {
				if ctr.Name == "fleet-agent" {
					image = ctr.Image
				}
			}
		case obj.Kind == "Secret" && obj.Metadata.Name == "fleet-agent-bootstrap":
			secretData = obj.Data
		case obj.Kind == "ConfigMap" && obj.Metadata.Name == "fleet-agent":
			config = obj.Data["config"]
		}
	}
	if image != wantImage {
		t.Errorf("fleet-agent image = %q, want %q (the mirror, pinned by digest)", image, wantImage)
	}
	if !strings.HasPrefix(image, f.Spec.Registry.Host+"/") || !strings.Contains(image, "@sha256:") {
		t.Errorf("fleet-agent image %q is not on the mirror %s pinned by digest", image, f.Spec.Registry.Host)
	}
	want := map[string]string{
		"tokenName":        cluster + "-token",
		"clusterNamespace": f.Spec.Manager.Namespace,
		"apiServerURL":     f.Spec.Manager.APIServerURL,
		"token":            "minted-token-for-tests",
	}
	for k, v := range want {
		got, err := base64.StdEncoding.DecodeString(secretData[k])
		if err != nil || string(got) != v {
			t.Errorf("bootstrap Secret %s = %q, want %q", k, got, v)
		}
	}
	if ca := f.Spec.Manager.APIServerCA; ca != nil {
		got, _ := base64.StdEncoding.DecodeString(secretData["apiServerCA"])
		if string(got) != string(ca.Data) {
			t.Error("bootstrap Secret apiServerCA is not the manager's CA")
		}
	}
	if clientID == "" || !strings.Contains(config, `"clientID":"`+clientID+`"`) {
		t.Errorf("agent config lacks client ID %q:\n%s", clientID, config)
	}
}

// writeYAML writes v to a new file in a temporary folder.
func writeYAML(t testing.TB, name string, v any) string {
	t.Helper()
	b, err := yaml.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// checkAgentScheduling checks that the chart put spec.clusters[].agent's
// tolerations and hostNetwork on the fleet-agent Deployment: the first
// agent schedules where the one Fleet redeploys from the Cluster will.
func checkAgentScheduling(t testing.TB, out []byte, c *schema.Cluster) {
	t.Helper()
	if c.Agent == nil {
		return
	}
	for _, doc := range crdcheck.SplitDocuments(out) {
		var dep struct {
			Kind     string `json:"kind"`
			Metadata struct {
				Name string `json:"name"`
			} `json:"metadata"`
			Spec struct {
				Template struct {
					Spec struct {
						HostNetwork bool                `json:"hostNetwork"`
						Tolerations []schema.Toleration `json:"tolerations"`
					} `json:"spec"`
				} `json:"template"`
			} `json:"spec"`
		}
		if err := yaml.Unmarshal(doc, &dep); err != nil || dep.Kind != "Deployment" || dep.Metadata.Name != "fleet-agent" {
			continue
		}
		ps := dep.Spec.Template.Spec
		for _, want := range c.Agent.Tolerations {
			found := false
			for _, got := range ps.Tolerations {
				found = found || (got.Key == want.Key && got.Operator == want.Operator && got.Value == want.Value && got.Effect == want.Effect)
			}
			if !found {
				t.Errorf("%s: the fleet-agent Deployment lacks the toleration %+v: %+v", c.Name, want, ps.Tolerations)
			}
		}
		if want := c.Agent.HostNetwork != nil && *c.Agent.HostNetwork; ps.HostNetwork != want {
			t.Errorf("%s: the fleet-agent Deployment's hostNetwork = %v, want %v", c.Name, ps.HostNetwork, want)
		}
		return
	}
	t.Errorf("%s: no fleet-agent Deployment rendered", c.Name)
}
