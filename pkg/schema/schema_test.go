package schema

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"fleetgen.dev/fleetgen/pkg/problem"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestDefaultIdempotent(t *testing.T) {
	t.Parallel()
	for _, dir := range goldenCases(t) {
		if !strings.HasPrefix(filepath.Base(dir), "valid") {
			continue
		}
		t.Run(filepath.Base(dir), func(t *testing.T) {
			before, _ := loadCase(t, dir) // defaulted once by Load
			f, _ := loadCase(t, dir)
			if f == nil {
				t.Fatal("want a valid fleet")
			}
			Default(f)
			if diff := cmp.Diff(before, f, cmpopts.IgnoreUnexported(Fleet{})); diff != "" {
				t.Errorf("Default changed a defaulted fleet (-before +after):\n%s", diff)
			}
		})
	}
}

func TestDefaultFillsEverything(t *testing.T) {
	t.Parallel()
	f := &Fleet{Spec: Spec{
		Defaults: Defaults{Labels: map[string]string{"org": "contoso", "env": "dev"}},
		Layers:   []Layer{{Name: "apps", Path: "apps"}},
		Clusters: []Cluster{
			{Name: "a", Labels: map[string]string{"env": "prod"}},
			{Name: "b", Registration: Registration{Mode: ModeCAPI}},
		},
		Encryption: &Encryption{SOPS: &SOPS{}},
	}}
	Default(f)
	tru := true
	want := &Fleet{Spec: Spec{
		Manager:    Manager{Name: "manager", Namespace: "fleet-default"},
		Registry:   Registry{Layout: LayoutStripHost},
		Source:     Source{Ref: "main", Interval: "1m", Bootstrap: BootstrapFlux},
		Encryption: &Encryption{SOPS: &SOPS{SecretRef: "sops-age"}},
		Defaults:   Defaults{Labels: map[string]string{"org": "contoso", "env": "dev"}, Registration: ModeAgent},
		Layers:     []Layer{{Name: "apps", Path: "apps", Interval: "10m", Prune: &tru}},
		Clusters: []Cluster{
			{Name: "a", Labels: map[string]string{"env": "prod", "org": "contoso"}, Registration: Registration{Mode: ModeAgent, ClientID: "auto", TokenTTL: "240h"}},
			{Name: "b", Labels: map[string]string{"env": "dev", "org": "contoso"}, Registration: Registration{Mode: ModeCAPI}},
		},
	}}
	if diff := cmp.Diff(want, f, cmpopts.IgnoreUnexported(Fleet{})); diff != "" {
		t.Errorf("Default (-want +got):\n%s", diff)
	}
	f.Spec.Source = Source{Kind: SourceOCI}
	Default(f)
	if f.Spec.Source.Ref != "latest" {
		t.Errorf("oci source ref: got %q, want latest", f.Spec.Source.Ref)
	}
}

// TestDeps keeps pkg/schema light: no registry, Git, kustomize or SOPS code.
func TestDeps(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs go list")
	}
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	banned := []string{"github.com/google/go-containerregistry", "github.com/go-git/", "sigs.k8s.io/kustomize", "github.com/getsops/sops", "k8s.io/client-go"}
	deps := strings.Fields(string(out))
	if len(deps) < 10 {
		t.Fatalf("go list -deps listed only %d packages", len(deps))
	}
	for _, d := range deps {
		for _, b := range banned {
			if strings.HasPrefix(d, b) {
				t.Errorf("pkg/schema depends on %s", d)
			}
		}
	}
}

func TestParseSizeCap(t *testing.T) {
	t.Parallel()
	big := bytes.Repeat([]byte("#"), MaxFleetSize+1)
	_, err := Parse("fleet.yaml", big)
	var es problem.Errors
	if !errors.As(err, &es) || len(es) != 1 || !strings.Contains(es[0].Msg, "at most") {
		t.Fatalf("Parse of %d bytes: got %v, want one size error", len(big), err)
	}

	flood := []byte("spec: {images: [" + strings.Repeat("a,", MaxItems) + "a]}")
	_, err = Parse("fleet.yaml", flood)
	if !errors.As(err, &es) || len(es) != 1 || !strings.Contains(es[0].Msg, "YAML items") {
		t.Fatalf("Parse of %d list items: got %.200v, want one item-count error", MaxItems+1, err)
	}

	// Load does not read a huge file at all: a sparse file of 1 GiB is refused
	// at once.
	path := filepath.Join(t.TempDir(), "fleet.yaml")
	fh, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := fh.Truncate(1 << 30); err != nil {
		t.Fatal(err)
	}
	fh.Close()
	start := time.Now()
	_, err = Load(path, LoadOptions{})
	if !errors.As(err, &es) || len(es) != 1 || strings.Contains(err.Error(), "\n") {
		t.Fatalf("Load of 1 GiB: got %v, want one line of error", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("Load of 1 GiB took %v", d)
	}
}

func TestLoadErrors(t *testing.T) {
	t.Parallel()
	_, err := Load(filepath.Join(t.TempDir(), "missing.yaml"), LoadOptions{})
	if !problem.IsInvalid(err) {
		t.Errorf("missing fleet.yaml: got %v, want an input error", err)
	}
	_, err = Load(t.TempDir(), LoadOptions{})
	if !problem.IsInvalid(err) || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("directory as fleet.yaml: got %v, want an input error", err)
	}
}

// TestAliasBombFast: a billion-laughs document is refused quickly.
func TestAliasBombFast(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	b.WriteString("a0: &a0 [x,x,x,x,x,x,x,x,x,x]\n")
	for i := 1; i < 30; i++ {
		fmt.Fprintf(&b, "a%d: &a%d [", i, i)
		for j := 0; j < 10; j++ {
			if j > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, "*a%d", i-1)
		}
		b.WriteString("]\n")
	}
	fmt.Fprintf(&b, "spec: {images: *a29}\n")
	start := time.Now()
	_, err := Parse("fleet.yaml", []byte(b.String()))
	if err == nil || strings.Count(err.Error(), "\n") != 0 || !strings.Contains(err.Error(), "aliases") {
		t.Fatalf("got %v, want one line about aliases", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("took %v", d)
	}
}

func TestPos(t *testing.T) {
	t.Parallel()
	f, err := Parse("fleet.yaml", []byte(`apiVersion: fleetgen.dev/v1alpha1
kind: Fleet
spec:
  clusters:
    - name: a
      labels: {env: prod}
      registration:
        mode: agent
`))
	if err != nil {
		t.Fatal(err)
	}
	check := func(t *testing.T) {
		for path, want := range map[string]Pos{
			"":                                   {Line: 1, Column: 1},
			"kind":                               {Line: 2, Column: 7},
			"spec":                               {Line: 3, Column: 1},
			"spec.clusters":                      {Line: 4, Column: 3},
			"spec.clusters[0]":                   {Line: 5, Column: 7},
			"spec.clusters[0].name":              {Line: 5, Column: 13},
			"spec.clusters[0].labels[env]":       {Line: 6, Column: 16},
			"spec.clusters[0].labels[nope]":      {Line: 6, Column: 7},
			"spec.clusters[0].registration":      {Line: 7, Column: 7},
			"spec.clusters[0].registration.mode": {Line: 8, Column: 15},
			"spec.clusters[0].registration.kubeconfig.file": {Line: 7, Column: 7},
			"spec.manager.apiServerURL":                     {Line: 3, Column: 1},
		} {
			if got := f.Pos(path); got != want {
				t.Errorf("Pos(%q) = %v, want %v", path, got, want)
			}
		}
		if !f.Has("spec.clusters[0].name") || f.Has("spec.manager") {
			t.Error("Has: wrong answer")
		}
		e := f.At(problem.Other("spec.clusters[0].registration.mode", "bad %s", "x"))
		if got, want := e.Error(), "fleet.yaml:8:15: spec.clusters[0].registration.mode: bad x"; got != want {
			t.Errorf("At: got %q, want %q", got, want)
		}
	}
	t.Run("loaded", check)
	kept := f.pos
	f.DropPositions()
	if f.pos != nil {
		t.Fatal("DropPositions kept the positions")
	}
	// Found again once, by whichever caller asks first (go test -race).
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() { f.Pos("spec.clusters[0].name") })
	}
	wg.Wait()
	t.Run("dropped", check)
	if d := cmp.Diff(kept, f.src.pos); d != "" {
		t.Errorf("positions found again differ (-loaded +again):\n%s", d)
	}
}

// TestValidateGoFleet: a Fleet built in Go (no positions) validates too, its
// errors without line numbers.
func TestValidateGoFleet(t *testing.T) {
	t.Parallel()
	f := &Fleet{APIVersion: APIVersion, Kind: Kind, Metadata: Metadata{Name: "x"}, Spec: Spec{
		Registry: Registry{Host: "r.example"},
		Images:   []string{FleetAgentImage},
		Source:   Source{Kind: SourceGit, URL: "https://example.com/x.git"},
		Clusters: []Cluster{{Name: "a"}, {Name: "a"}},
	}}
	Default(f)
	err := Validate(f)
	want := "spec.manager.apiServerURL: apiServerURL is required because cluster \"a\" uses mode agent: want https://HOST[:PORT]\n" +
		"spec.clusters[1].name: duplicate cluster name \"a\" (also spec.clusters[0]): want unique names"
	if err == nil || err.Error() != want {
		t.Errorf("Validate:\ngot  %v\nwant %s", err, want)
	}
	f.Spec.Clusters = f.Spec.Clusters[:1]
	f.Spec.Manager.APIServerURL = "https://fleet.example"
	if err := Validate(f); err != nil {
		t.Errorf("Validate of a valid fleet: %v", err)
	}
}

// TestNoContentInErrors: what a reference holds never shows in an error.
func TestNoContentInErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	const secret = "not-a-pem-but-SECRET-VALUE"
	os.WriteFile(filepath.Join(dir, "ca.pem"), []byte(secret), 0o644)
	os.WriteFile(filepath.Join(dir, "fleet.yaml"), []byte(`apiVersion: fleetgen.dev/v1alpha1
kind: Fleet
metadata: {name: x}
spec:
  manager: {apiServerURL: "https://m.example", apiServerCA: {file: ca.pem}}
  registry: {host: r.example}
  source: {kind: git, url: "https://example.com/x.git"}
  clusters:
    - name: m
      registration: {mode: manager, kubeconfig: {env: FLEETGEN_KUBECONFIG_KC}}
    - name: v
      registration: {mode: verrazzano, caCert: {value: SECRET-VALUE}}
`), 0o644)
	_, err := Load(filepath.Join(dir, "fleet.yaml"), LoadOptions{LookupEnv: func(string) (string, bool) { return "SECRET-VALUE", true }})
	if err == nil {
		t.Fatal("want errors")
	}
	if strings.Contains(err.Error(), "SECRET") {
		t.Errorf("error shows content:\n%v", err)
	}
}

// FuzzParse: Parse, Default and Validate never panic on any input, and a
// whole-document problem is one line. Seeded with every golden case and every
// example's fleet.yaml.
func FuzzParse(f *testing.F) {
	seeds, err := filepath.Glob(filepath.Join("..", "..", "examples", "*", "fleet.yaml"))
	if err != nil || len(seeds) == 0 {
		f.Fatalf("no example fleets: %v", err)
	}
	for _, dir := range goldenCases(f) {
		seeds = append(seeds, filepath.Join(dir, "fleet.yaml"))
	}
	for _, p := range seeds {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fl, errs, ok := parse("fleet.yaml", data)
		if !ok {
			if len(errs) != 1 || strings.Contains(errs.Error(), "\n") {
				t.Fatalf("whole-document problem: want one line, got %q", errs.Error())
			}
			return
		}
		Default(fl)
		_ = validate(fl)
		_ = Validate(fl)
	})
}

func TestIsFleetAgentImage(t *testing.T) {
	t.Parallel()
	for ref, want := range map[string]bool{
		"docker.io/rancher/fleet-agent:v0.16.1":                       true,
		"rancher/fleet-agent":                                         true,
		"rancher/fleet-agent@sha256:" + strings.Repeat("a", 64):       true,
		"localhost:5000/mirror/rancher/fleet-agent:v0.13.15":          true,
		"contoso.azurecr.io/rancher/fleet-agent:v0.16.1@sha256:" + "": true,
		"rancher/fleet":                                 false,
		"rancher/fleet-agent-extra:v1":                  false,
		"ghcr.io/notrancher/fleet-agent:v1":             false,
		"docker.io/rancher/fleet-agentx:v0.16.1":        false,
		"localhost:5000/rancher/fleet-agent/child:v1.0": false,
	} {
		if got := IsFleetAgentImage(ref); got != want {
			t.Errorf("IsFleetAgentImage(%q) = %v, want %v", ref, got, want)
		}
	}
}
