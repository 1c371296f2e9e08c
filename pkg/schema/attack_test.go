package schema

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"fleetgen.dev/fleetgen/pkg/problem"
)

// marker is planted in every file and variable a pull request must not be
// able to read; it may appear in no error.
const marker = "MARKER-d1e8f0c3a7"

// markedKubeconfig is a valid kubeconfig holding marker as its token.
const markedKubeconfig = `apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {server: "https://k.example:6443"}
users:
- name: u
  user: {token: ` + marker + `}
contexts:
- name: x
  context: {cluster: c, user: u}
current-context: x
`

// attackFleet is a fleet.yaml whose one manager cluster's kubeconfig is ref.
func attackFleet(ref string) string {
	return `apiVersion: fleetgen.dev/v1alpha1
kind: Fleet
metadata: {name: x}
spec:
  registry: {host: r.example}
  source: {kind: git, url: "https://example.com/x.git"}
  clusters:
    - name: m
      registration:
        mode: manager
        kubeconfig: ` + ref + `
`
}

// loadWithin runs Load and fails the test, rather than hanging it, when Load
// has not returned after a few seconds (a FIFO opened for reading blocks
// until a writer comes).
func loadWithin(t *testing.T, path string, opts LoadOptions) (*Fleet, error) {
	t.Helper()
	type result struct {
		f   *Fleet
		err error
	}
	done := make(chan result, 1)
	go func() {
		f, err := Load(path, opts)
		done <- result{f, err}
	}()
	select {
	case r := <-done:
		return r.f, r.err
	case <-time.After(10 * time.Second):
		t.Fatal("Load still blocked after 10s")
		return nil, nil
	}
}

// TestLoadAttacks: every way a fleet.yaml from a pull request could read a
// file outside its folder or a variable of the job is refused with a field
// error, and what those hold appears in no message.
func TestLoadAttacks(t *testing.T) {
	t.Parallel()
	outside := t.TempDir()
	secret := filepath.Join(outside, "kubeconfig")
	if err := os.WriteFile(secret, []byte(markedKubeconfig), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{
		"HOME":                          marker,
		"FLEETGEN_GIT_TOKEN":            marker,
		"FLEETGEN_KUBECONFIG_BIG":       strings.Repeat("x", MaxRefSize+1),
		"CI_KUBE_PROD":                  markedKubeconfig,
		"FLEETGEN_KUBECONFIG_NOT_KUBE":  "current-context: " + marker,
		"FLEETGEN_KUBECONFIG_HTTP_KUBE": strings.Replace(markedKubeconfig, "https://k.example", "http://"+marker, 1),
	}
	tests := map[string]struct {
		ref     string
		setup   func(t *testing.T, dir string)
		opts    LoadOptions
		wantErr string // "": valid
	}{
		"absolute path":  {ref: "{file: " + secret + "}", wantErr: "is an absolute path: want a path relative to the folder of fleet.yaml"},
		"dot dot":        {ref: "{file: ../" + filepath.Base(outside) + "/kubeconfig}", wantErr: "leads out of the folder of fleet.yaml: want a path inside it (no ..)"},
		"dot dot inside": {ref: "{file: sub/../../" + filepath.Base(outside) + "/kubeconfig}", wantErr: "leads out of the folder of fleet.yaml: want a path inside it (no ..)"},
		"symlink out": {
			ref:     "{file: kc.yaml}",
			setup:   func(t *testing.T, dir string) { symlink(t, secret, filepath.Join(dir, "kc.yaml")) },
			wantErr: "leads out of the folder of fleet.yaml through a symlink",
		},
		"relative symlink out": {
			ref: "{file: kc.yaml}",
			setup: func(t *testing.T, dir string) {
				symlink(t, "../"+filepath.Base(outside)+"/kubeconfig", filepath.Join(dir, "kc.yaml"))
			},
			wantErr: "leads out of the folder of fleet.yaml through a symlink",
		},
		"folder symlink out": {
			ref:     "{file: kubeconfigs/kubeconfig}",
			setup:   func(t *testing.T, dir string) { symlink(t, outside, filepath.Join(dir, "kubeconfigs")) },
			wantErr: "leads out of the folder of fleet.yaml through a symlink",
		},
		"symlink to /dev/zero": {
			ref:     "{file: kc.yaml}",
			setup:   func(t *testing.T, dir string) { symlink(t, "/dev/zero", filepath.Join(dir, "kc.yaml")) },
			wantErr: "through a symlink",
		},
		"symlink inside": {
			ref: "{file: kc.yaml}",
			setup: func(t *testing.T, dir string) {
				writeFile(t, filepath.Join(dir, "real", "kc.yaml"), markedKubeconfig)
				symlink(t, "real/kc.yaml", filepath.Join(dir, "kc.yaml"))
			},
		},
		"fifo": {
			ref: "{file: kc.yaml}",
			setup: func(t *testing.T, dir string) {
				if err := syscall.Mkfifo(filepath.Join(dir, "kc.yaml"), 0o644); err != nil {
					t.Fatal(err)
				}
			},
			wantErr: `"kc.yaml" is not a regular file (a folder, FIFO or device): want a regular file`,
		},
		"oversized file": {
			ref: "{file: kc.yaml}",
			setup: func(t *testing.T, dir string) {
				writeFile(t, filepath.Join(dir, "kc.yaml"), markedKubeconfig+"#"+strings.Repeat(marker, MaxRefSize/len(marker)))
			},
			wantErr: "is larger than 1048576 bytes",
		},
		"env HOME":               {ref: "{env: HOME}", wantErr: "fleetgen does not read HOME: want a variable whose name starts with FLEETGEN_KUBECONFIG_ (the command line may allow"},
		"env FLEETGEN_GIT_TOKEN": {ref: "{env: FLEETGEN_GIT_TOKEN}", wantErr: "fleetgen does not read FLEETGEN_GIT_TOKEN"},
		"env another prefix":     {ref: "{env: CI_KUBE_PROD}", wantErr: "fleetgen does not read CI_KUBE_PROD"},
		"env prefix from the command line": {
			ref:  "{env: CI_KUBE_PROD}",
			opts: LoadOptions{EnvPrefix: "CI_KUBE_"},
		},
		"env prefix does not open HOME": {
			ref:     "{env: HOME}",
			opts:    LoadOptions{EnvPrefix: "CI_KUBE_"},
			wantErr: "want a variable whose name starts with FLEETGEN_KUBECONFIG_ or CI_KUBE_",
		},
		"env oversized":      {ref: "{env: FLEETGEN_KUBECONFIG_BIG}", wantErr: "holds more than 1048576 bytes"},
		"env not kubeconfig": {ref: "{env: FLEETGEN_KUBECONFIG_NOT_KUBE}", wantErr: "current-context names no context"},
		"env http server":    {ref: "{env: FLEETGEN_KUBECONFIG_HTTP_KUBE}", wantErr: "server must be an https:// URL"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			path := filepath.Join(dir, "fleet.yaml")
			writeFile(t, path, attackFleet(tc.ref))
			if tc.setup != nil {
				tc.setup(t, dir)
			}
			var asked []string
			opts := tc.opts
			opts.LookupEnv = func(k string) (string, bool) {
				asked = append(asked, k)
				v, ok := env[k]
				return v, ok
			}
			f, err := loadWithin(t, path, opts)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("Load: %v", err)
				}
				if !strings.Contains(string(f.Spec.Clusters[0].Registration.Kubeconfig.Data), marker) {
					t.Fatal("Load did not read the kubeconfig")
				}
				return
			}
			var es problem.Errors
			if !errors.As(err, &es) {
				t.Fatalf("Load: got %T %v, want field errors", err, err)
			}
			if !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), "fleet.yaml:11:") || !strings.Contains(err.Error(), "spec.clusters[0].registration.kubeconfig") {
				t.Errorf("Load error:\n%v\nwant fleet.yaml:11:…: spec.clusters[0].registration.kubeconfig…: %s", err, tc.wantErr)
			}
			if strings.Contains(err.Error(), marker) {
				t.Errorf("the error shows what the reference holds:\n%v", err)
			}
			for _, k := range asked {
				if k == "HOME" || k == "FLEETGEN_GIT_TOKEN" || (k == "CI_KUBE_PROD" && tc.opts.EnvPrefix == "") {
					t.Errorf("Load looked up %s", k)
				}
			}
		})
	}
}

// TestLoadFIFO: a FIFO (or a device) named as fleet.yaml is an input error
// at once, not a read that waits for a writer.
func TestLoadFIFO(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "fleet.yaml")
	if err := syscall.Mkfifo(path, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{path, "/dev/zero"} {
		_, err := loadWithin(t, p, LoadOptions{})
		if !problem.IsInvalid(err) || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("Load(%s) = %v, want an input error: not a regular file", p, err)
		}
	}
}

// TestLoadFleetSymlink: -f names fleet.yaml, but a pull request decides
// whether that is a symlink; one that leads out of its folder is refused.
func TestLoadFleetSymlink(t *testing.T) {
	t.Parallel()
	outside := filepath.Join(t.TempDir(), "secret.yaml")
	writeFile(t, outside, "apiVersion: "+marker+"\n")
	dir := t.TempDir()
	symlink(t, outside, filepath.Join(dir, "fleet.yaml"))
	_, err := Load(filepath.Join(dir, "fleet.yaml"), LoadOptions{})
	if !problem.IsInvalid(err) || !strings.Contains(err.Error(), "a symlink that leads out of its folder") {
		t.Errorf("fleet.yaml symlinked out: %v, want an input error", err)
	}
	if err != nil && strings.Contains(err.Error(), marker) {
		t.Errorf("the error quotes the symlink's target:\n%v", err)
	}

	writeFile(t, filepath.Join(dir, "real", "fleet.yaml"), attackFleet("{file: kc.yaml}"))
	writeFile(t, filepath.Join(dir, "kc.yaml"), markedKubeconfig)
	symlink(t, "real/fleet.yaml", filepath.Join(dir, "inside.yaml"))
	if _, err := Load(filepath.Join(dir, "inside.yaml"), LoadOptions{}); err != nil {
		t.Errorf("fleet.yaml symlinked inside its folder: %v", err)
	}
}

func TestEnvPrefixOption(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "fleet.yaml")
	writeFile(t, path, attackFleet("{env: FLEETGEN_KUBECONFIG_X}"))
	for prefix, want := range map[string]string{
		"FLEETGEN_":     "would let fleet.yaml read fleetgen's own credentials",
		"FLEETGEN_GIT_": "would let fleet.yaml read fleetgen's own credentials",
		"SOPS_AGE_":     "would let fleet.yaml read fleetgen's own credentials",
		"F":             "would let fleet.yaml read fleetgen's own credentials",
		"1X":            "invalid environment prefix",
		"A-B":           "invalid environment prefix",
	} {
		_, err := Load(path, LoadOptions{EnvPrefix: prefix, LookupEnv: func(string) (string, bool) { return markedKubeconfig, true }})
		if !problem.IsInvalid(err) || !strings.Contains(err.Error(), want) {
			t.Errorf("EnvPrefix %q: got %v, want an input error: %s", prefix, err, want)
		}
	}
}

func symlink(t *testing.T, target, name string) {
	t.Helper()
	if err := os.Symlink(target, name); err != nil {
		t.Fatal(err)
	}
}

func writeFile(t *testing.T, name, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(name, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestPEMErrorsQuoteNothing: a PEM file that is not a certificate is named by
// block number, not by the type its header spells.
func TestPEMErrorsQuoteNothing(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "ca.pem"), "-----BEGIN "+marker+"-----\nAAAA\n-----END "+marker+"-----\n")
	writeFile(t, filepath.Join(dir, "fleet.yaml"), `apiVersion: fleetgen.dev/v1alpha1
kind: Fleet
metadata: {name: x}
spec:
  manager: {apiServerURL: "https://m.example", apiServerCA: {file: ca.pem}}
  registry: {host: r.example}
  source: {kind: git, url: "https://example.com/x.git"}
`)
	_, err := Load(filepath.Join(dir, "fleet.yaml"), LoadOptions{})
	if err == nil || !strings.Contains(err.Error(), "PEM block 1 is not a certificate") {
		t.Fatalf("Load = %v, want PEM block 1 is not a certificate", err)
	}
	if strings.Contains(err.Error(), marker) {
		t.Errorf("the error quotes the PEM header:\n%v", err)
	}
}

// TestAPIServerCAControlCharacters: a CA bundle whose certificates parse but
// whose text holds a control character is refused by Validate, not by render
// later (the agents' values carry it as text).
func TestAPIServerCAControlCharacters(t *testing.T) {
	t.Parallel()
	pemData, err := os.ReadFile("testdata/golden/valid/certs/manager-ca.pem")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "ca.pem"), "\x1b[31m\n"+string(pemData))
	writeFile(t, filepath.Join(dir, "fleet.yaml"), `apiVersion: fleetgen.dev/v1alpha1
kind: Fleet
metadata: {name: x}
spec:
  manager: {apiServerURL: "https://m.example", apiServerCA: {file: ca.pem}}
  registry: {host: r.example}
  source: {kind: git, url: "https://example.com/x.git"}
`)
	_, err = Load(filepath.Join(dir, "fleet.yaml"), LoadOptions{})
	if err == nil || !strings.Contains(err.Error(), "spec.manager.apiServerCA: not a PEM text file") {
		t.Fatalf("Load = %v, want not a PEM text file", err)
	}
}
