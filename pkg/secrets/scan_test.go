package secrets

import (
	"bytes"
	"encoding/base64"
	"strings"
	"testing"

	"fleetgen.dev/fleetgen/pkg/layout"
	"fleetgen.dev/fleetgen/pkg/problem"
)

func rawFile(path string, secret bool, body string) layout.File {
	return layout.File{Path: path, Data: []byte(layout.Header + body), Secret: secret}
}

func TestScan(t *testing.T) {
	t.Parallel()
	sealed := mustSeal(t, fleetFiles(t, 1, kubeconfigFor), testSOPS(testRecipient), nil)
	plain := fleetFiles(t, 1, kubeconfigFor)
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

	tests := map[string]struct {
		files          []layout.File
		allowPlaintext bool
		wantErr        []string // substrings; nil: no error
	}{
		"sealed output passes": {files: sealed},
		"plaintext kubeconfig refused": {
			files:   plain,
			wantErr: []string{"manager/fleet/prod-0/kubeconfig.yaml: Secret fleet-default/prod-0-kubeconfig holds unencrypted data", "spec.encryption.sops.ageRecipients", "--allow-plaintext-secrets"},
		},
		"allow plaintext passes": {files: plain, allowPlaintext: true},
		"verrazzano CA exempt":   {files: []layout.File{verrazzanoCAFile(t, "m1", testCAPEM)}},
		"verrazzano CA without data exempt": {files: []layout.File{rawFile("manager/verrazzano/m1/ca.yaml", false,
			"apiVersion: v1\nkind: Secret\nmetadata:\n  name: ca-secret-m1\n  namespace: verrazzano-mc\n")}},
		"verrazzano CA holding a private key refused": {
			files:   []layout.File{verrazzanoCAFile(t, "m1", testCAPEM+"-----BEGIN RSA PRIVATE KEY-----\nx\n-----END RSA PRIVATE KEY-----\n")},
			wantErr: []string{"Secret verrazzano-mc/ca-secret-m1"},
		},
		"verrazzano CA with another key refused": {
			files: []layout.File{rawFile("manager/verrazzano/m1/ca.yaml", false,
				"apiVersion: v1\nkind: Secret\nmetadata:\n  name: ca-secret-m1\n  namespace: verrazzano-mc\ndata:\n  cacrt: "+b64(testCAPEM)+"\n  token: "+b64("x")+"\n")},
			wantErr: []string{"ca-secret-m1"},
		},
		"CA name in another namespace refused": {
			files: []layout.File{rawFile("manager/x.yaml", false,
				"apiVersion: v1\nkind: Secret\nmetadata:\n  name: ca-secret-m1\n  namespace: default\ndata:\n  cacrt: "+b64(testCAPEM)+"\n")},
			wantErr: []string{"default/ca-secret-m1"},
		},
		"secret in a non-secret file caught": {
			files: []layout.File{rawFile("manager/extra.yaml", false,
				"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  a: b\n---\napiVersion: v1\nkind: Secret\nmetadata:\n  name: sneaky\n  namespace: ns\nstringData:\n  password: hunter2\n")},
			wantErr: []string{"manager/extra.yaml: Secret ns/sneaky"},
		},
		"json spelling caught": {
			files:   []layout.File{rawFile("x.json", false, `{"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "j"}, "data": {"k": "dg=="}}`+"\n")},
			wantErr: []string{"x.json: Secret j"},
		},
		"tagged kind caught": {
			files:   []layout.File{rawFile("t.yaml", false, "kind: !!str Secret\nmetadata: {name: t}\ndata: {k: dg==}\n")},
			wantErr: []string{"t.yaml: Secret t"},
		},
		"secret inside a List caught": {
			files:   []layout.File{rawFile("l.yaml", false, "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Secret\n  metadata: {name: inlist}\n  data: {k: dg==}\n")},
			wantErr: []string{"l.yaml: Secret inlist"},
		},
		"secret without data passes": {
			files: []layout.File{rawFile("e.yaml", false, "apiVersion: v1\nkind: Secret\nmetadata: {name: e}\ntype: Opaque\n")},
		},
		"partly encrypted refused": {
			files: []layout.File{rawFile("p.yaml", false,
				"apiVersion: v1\nkind: Secret\nmetadata: {name: p}\ndata:\n  a: ENC[AES256_GCM,data:abc,iv:x,tag:y,type:str]\n  b: dg==\nsops:\n  mac: ENC[AES256_GCM,data:abc,iv:x,tag:y,type:str]\n")},
			wantErr: []string{"p.yaml: Secret p"},
		},
		"envelopes without sops metadata refused": {
			files:   []layout.File{rawFile("m.yaml", false, "apiVersion: v1\nkind: Secret\nmetadata: {name: m}\ndata:\n  a: ENC[AES256_GCM,data:abc,iv:x,tag:y,type:str]\n")},
			wantErr: []string{"m.yaml: Secret m"},
		},
		"unsealed secret file without a Secret refused": {
			files:   []layout.File{rawFile("manager/fleet/c/kubeconfig.yaml", true, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n")},
			wantErr: []string{"manager/fleet/c/kubeconfig.yaml: credential file is not SOPS-encrypted"},
		},
		"flagged file with a plaintext CA-like Secret refused": {
			files:   []layout.File{rawFile("manager/fleet/c/kubeconfig.yaml", true, "apiVersion: v1\nkind: Secret\nmetadata: {name: ca-secret-c, namespace: verrazzano-mc}\ndata: {cacrt: "+b64(testCAPEM)+"}\n")},
			wantErr: []string{"verrazzano-mc/ca-secret-c holds unencrypted data"},
		},
		"kubeConfigSecret mention is not a Secret": {
			files: []layout.File{clusterFile(t, "prod-0")},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			err := Scan(tc.files, tc.allowPlaintext)
			if tc.wantErr == nil {
				if err != nil {
					t.Fatalf("Scan = %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatal("Scan = nil, want an error")
			}
			if !problem.IsInvalid(err) {
				t.Errorf("Scan error is not an input error: %v", err)
			}
			for _, w := range tc.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Scan error lacks %q:\n%v", w, err)
				}
			}
		})
	}
}

func TestScanListsAtMostSome(t *testing.T) {
	t.Parallel()
	err := Scan(fleetFiles(t, maxListed+5, kubeconfigFor), false)
	if err == nil || !strings.Contains(err.Error(), "… and 5 more") {
		t.Fatalf("Scan = %v, want a bounded list", err)
	}
}

func TestMayHoldSecret(t *testing.T) {
	t.Parallel()
	tests := map[string]bool{
		"kind: Secret\n":                     true,
		"kind:   'Secret'\n":                 true,
		`{"kind":"Secret"}`:                  true,
		"kind: Secret":                       true,
		"- {kind: Secret, data: {}}\n":       true,
		"kind: SecretStore\n":                false,
		"spec:\n  kubeConfigSecret: x\n":     false,
		"kind: Cluster\n":                    false,
		"kind: ConfigMap\nx: !!str Secret\n": true, // tags force a parse
	}
	for in, want := range tests {
		if got := mayHoldSecret([]byte(in)); got != want {
			t.Errorf("mayHoldSecret(%q) = %v, want %v", in, got, want)
		}
	}
	// Every Secret the kustomize build would see must pass the filter.
	for _, f := range fleetFiles(t, 1, kubeconfigFor) {
		if bytes.Contains(f.Data, []byte("kind: Secret")) && !mayHoldSecret(f.Data) {
			t.Errorf("%s: filter misses a Secret", f.Path)
		}
	}
}

// TestPlaintextSpellings: publish pushes layer folders a pull request wrote;
// every way YAML can spell a Secret with plaintext data, or make one with a
// secretGenerator, is found (issue 20, item 5). The scanner used to match
// text and let the first ones through.
func TestPlaintextSpellings(t *testing.T) {
	t.Parallel()
	const rest = "metadata: {name: s, namespace: ns}\nstringData: {password: hunter2}\n"
	utf16 := func(s string) string {
		b := []byte{0xFE, 0xFF}
		for _, r := range s {
			b = append(b, byte(r>>8), byte(r))
		}
		return string(b)
	}
	sopsEnv := "password=ENC[AES256_GCM,data:abc,iv:x,tag:y,type:str]\nsops_mac=ENC[AES256_GCM,data:abc,iv:x,tag:y,type:str]\nsops_version=3.9.0\n"
	refused := map[string]map[string]string{
		"kind on the next line":   {"apps/s.yaml": "apiVersion: v1\nkind:\n  Secret\n" + rest},
		"complex key":             {"apps/s.yaml": "apiVersion: v1\n? kind\n: Secret\n" + rest},
		"hex escape":              {"apps/s.yaml": "apiVersion: v1\nkind: \"Secr\\x65t\"\n" + rest},
		"unicode escape":          {"apps/s.yaml": "apiVersion: v1\nkind: \"Secr\\u0065t\"\n" + rest},
		"json unicode escape":     {"apps/s.json": `{"apiVersion": "v1", "kind": "Secr\u0065t", "metadata": {"name": "s"}, "data": {"k": "dg=="}}`},
		"comment before value":    {"apps/s.yaml": "apiVersion: v1\nkind: # c\n  Secret\n" + rest},
		"folded block scalar":     {"apps/s.yaml": "apiVersion: v1\nkind: >-\n  Secret\n" + rest},
		"literal block scalar":    {"apps/s.yaml": "apiVersion: v1\nkind: |-\n  Secret\n" + rest},
		"line continuation":       {"apps/s.yaml": "apiVersion: v1\nkind: \"Secr\\\n  et\"\n" + rest},
		"flow style":              {"apps/s.yaml": "{apiVersion: v1, kind: Secret, metadata: {name: s}, data: {k: dg==}}\n"},
		"anchor and alias":        {"apps/s.yaml": "apiVersion: v1\nx: &k Secret\nkind: *k\n" + rest},
		"merge key":               {"apps/s.yaml": "<<: {apiVersion: v1, kind: Secret}\n" + rest},
		"binary tag":              {"apps/s.yaml": "apiVersion: v1\nkind: !!binary U2VjcmV0\n" + rest},
		"utf-16":                  {"apps/s.yaml": utf16("apiVersion: v1\nkind: Secret\n" + rest)},
		"crlf":                    {"apps/s.yaml": strings.ReplaceAll("apiVersion: v1\nkind: Secret\n"+rest, "\n", "\r\n")},
		"second document":         {"apps/s.yaml": "kind: ConfigMap\n--- # next\napiVersion: v1\nkind: Secret\n" + rest},
		"non-string key":          {"apps/s.yaml": "apiVersion: v1\n? [a]\n: b\nkind: Secret\n" + rest},
		"duplicate key, any name": {"apps/s.txt": "apiVersion: v1\nkind: Secret\nkind: Secret\n" + rest},
		"not YAML":                {"apps/s.yaml": "apiVersion: v1\nkind: Secret\n" + rest + "x: [\n"},
		"generator literals":      {"apps/kustomization.yaml": "secretGenerator:\n- name: s\n  literals: [password=hunter2]\n"},
		"generator literals yml":  {"apps/kustomization.yml": "secretGenerator:\n- name: s\n  literals: [password=hunter2]\n"},
		"generator Kustomization": {"apps/Kustomization": "secretGenerator:\n- name: s\n  literals: [password=hunter2]\n"},
		"generator plaintext env": {
			"apps/kustomization.yaml": "secretGenerator:\n- name: s\n  envs: [s.env]\n",
			"apps/s.env":              "password=hunter2\n",
		},
		"generator plaintext file": {
			"apps/kustomization.yaml": "secretGenerator:\n- name: s\n  files: [key=../shared/s.key]\n",
			"shared/s.key":            "hunter2\n",
		},
		"generator file not published": {"apps/kustomization.yaml": "secretGenerator:\n- name: s\n  files: [missing.key]\n"},
		"SecretGenerator object": {
			"apps/kustomization.yaml": "generators: [gen.yaml]\n",
			"apps/gen.yaml":           "apiVersion: builtin\nkind: SecretGenerator\nmetadata: {name: s}\nliterals: [password=hunter2]\n",
		},
		"inline SecretGenerator": {"apps/kustomization.yaml": "generators:\n- |\n  apiVersion: builtin\n  kind: SecretGenerator\n  metadata: {name: s}\n  literals: [password=hunter2]\n"},
	}
	passed := map[string]map[string]string{
		"generator sops env": {
			"apps/kustomization.yaml": "secretGenerator:\n- name: s\n  envs: [s.env]\n",
			"apps/s.env":              sopsEnv,
		},
		"generator without secrets": {"apps/kustomization.yaml": "resources: [a.yaml]\nconfigMapGenerator:\n- name: c\n  literals: [a=b]\n"},
		"not YAML, not a manifest":  {"apps/README.md": "# Secret\n\nkey: value: [\n"},
		"SecretStore":               {"apps/s.yaml": "apiVersion: v1\nkind: SecretStore\n" + rest},
		"Secret without data":       {"apps/s.yaml": "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\n"},
	}
	files := func(m map[string]string) []layout.File {
		var out []layout.File
		for p, d := range m {
			out = append(out, layout.File{Path: p, Data: []byte(d)})
		}
		return out
	}
	for name, m := range refused {
		t.Run("refused/"+name, func(t *testing.T) {
			t.Parallel()
			found, err := Plaintext(files(m))
			if err != nil {
				t.Fatal(err)
			}
			if len(found) == 0 {
				t.Fatal("let through")
			}
			for _, f := range found {
				if strings.Contains(f.String(), "hunter2") {
					t.Fatalf("a finding quotes the secret: %s", f)
				}
			}
		})
	}
	for name, m := range passed {
		t.Run("passed/"+name, func(t *testing.T) {
			t.Parallel()
			found, err := Plaintext(files(m))
			if err != nil || len(found) > 0 {
				t.Fatalf("Plaintext = %v, %v; want nothing", found, err)
			}
		})
	}
}
