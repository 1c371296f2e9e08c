package schema

import (
	"bytes"
	"encoding/base64"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// Markers planted in the kubeconfigs below; no error may contain any of them.
const (
	markToken  = "MARKTOKENz8Kq"
	markKey    = "MARKKEYr4Tn"
	markCert   = "MARKCERTp2Lw"
	markPass   = "MARKPASSv6Hd"
	markServer = "MARKSERVERj5Ry"
	markPath   = "MARKPATHc1Fs"
)

var allMarks = []string{markToken, markKey, markCert, markPass, markServer, markPath}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

// kc builds a kubeconfig from a cluster block and a user block.
func kc(current, cluster, user string) string {
	return `apiVersion: v1
kind: Config
current-context: ` + current + `
clusters:
- name: c1
  cluster:
` + cluster + `
contexts:
- name: ctx
  context:
    cluster: c1
    user: u1
users:
- name: u1
  user:
` + user
}

const httpsServer = "    server: https://" + markServer + ".example.invalid:6443\n    certificate-authority-data: " + "Q0E=\n"

func TestCheckKubeconfig(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		in      string
		wantErr []string // substrings; nil: valid
	}{
		"token":             {in: kc("ctx", httpsServer, "    token: "+markToken+"\n")},
		"client cert":       {in: kc("ctx", httpsServer, "    client-certificate-data: "+b64(markCert)+"\n    client-key-data: "+b64(markKey)+"\n")},
		"exec":              {in: kc("ctx", httpsServer, "    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      command: kubelogin\n")},
		"auth provider":     {in: kc("ctx", httpsServer, "    auth-provider:\n      name: oidc\n      config: {id-token: "+markToken+"}\n")},
		"basic auth":        {in: kc("ctx", httpsServer, "    username: admin\n    password: "+markPass+"\n")},
		"no current":        {in: kc("", httpsServer, "    token: "+markToken+"\n"), wantErr: []string{"no current-context"}},
		"unknown context":   {in: kc("nope", httpsServer, "    token: "+markToken+"\n"), wantErr: []string{`current-context names no context`}},
		"http server":       {in: kc("ctx", "    server: http://admin:"+markPass+"@"+markServer+":8080\n", "    token: "+markToken+"\n"), wantErr: []string{`clusters[0].cluster.server must be an https:// URL (the current context's cluster)`}},
		"no server":         {in: kc("ctx", "    insecure-skip-tls-verify: true\n", "    token: "+markToken+"\n"), wantErr: []string{"server must be an https:// URL"}},
		"bad server":        {in: kc("ctx", "    server: \"https://"+markServer+"%zz\"\n", "    token: "+markToken+"\n"), wantErr: []string{"server must be an https:// URL"}},
		"cert without key":  {in: kc("ctx", httpsServer, "    client-certificate-data: "+b64(markCert)+"\n"), wantErr: []string{`users[0].user has no credentials (the current context's user)`}},
		"no credentials":    {in: kc("ctx", httpsServer, "    {}\n"), wantErr: []string{`users[0].user has no credentials (the current context's user)`}},
		"ca file":           {in: kc("ctx", "    server: https://x:6443\n    certificate-authority: /etc/"+markPath+"/ca.pem\n", "    token: "+markToken+"\n"), wantErr: []string{`clusters[0].cluster.certificate-authority refers to a file; embed it as certificate-authority-data`}},
		"client cert files": {in: kc("ctx", httpsServer, "    client-certificate: /"+markPath+"/c.pem\n    client-key: /"+markPath+"/k.pem\n"), wantErr: []string{`users[0].user.client-certificate refers to a file`, `users[0].user.client-key refers to a file; embed it as client-key-data`}},
		"token file":        {in: kc("ctx", httpsServer, "    tokenFile: /var/run/"+markPath+"\n"), wantErr: []string{`users[0].user.tokenFile refers to a file; embed it as token`}},
		"missing cluster":   {in: strings.Replace(kc("ctx", httpsServer, "    token: "+markToken+"\n"), "cluster: c1", "cluster: c2", 1), wantErr: []string{`contexts[0].context.cluster names no entry of clusters (the current context's cluster)`}},
		"missing user":      {in: strings.Replace(kc("ctx", httpsServer, "    token: "+markToken+"\n"), "user: u1", "user: u2", 1), wantErr: []string{`contexts[0].context.user names no entry of users (the current context's user)`}},
		"file ref on an unused user": {
			in:      kc("ctx", httpsServer, "    token: "+markToken+"\n- name: other\n  user:\n    client-key: /"+markPath+"\n"),
			wantErr: []string{`users[1].user.client-key refers to a file`},
		},
		"not yaml":       {in: "clusters: [\n  token: " + markToken + " : : {", wantErr: []string{"kubeconfig is not valid YAML"}},
		"wrong type":     {in: "users: " + markToken + "\n", wantErr: []string{"kubeconfig is not a kubeconfig"}},
		"tab in yaml":    {in: "current-context: ctx\n\ttoken: " + markToken + "\n", wantErr: []string{"kubeconfig is not valid YAML"}},
		"empty document": {in: "", wantErr: []string{"no current-context"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			err := CheckKubeconfig([]byte(tc.in))
			if tc.wantErr == nil {
				if err != nil {
					t.Fatalf("CheckKubeconfig = %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatal("CheckKubeconfig = nil, want an error")
			}
			msg := err.Error()
			for _, w := range tc.wantErr {
				if !strings.Contains(msg, w) {
					t.Errorf("error lacks %q:\n%s", w, msg)
				}
			}
			for _, m := range allMarks {
				if strings.Contains(msg, m) || strings.Contains(msg, b64(m)) {
					t.Errorf("error leaks a planted marker (%d chars): the message must not quote the kubeconfig", len(m))
				}
			}
		})
	}
}

// TestCheckKubeconfigMarkersPresent keeps the leak checks honest: every
// marker is in some input above.
func TestCheckKubeconfigMarkersPresent(t *testing.T) {
	t.Parallel()
	in := kc("ctx", httpsServer, "    token: "+markToken+"\n    client-key-data: "+b64(markKey)+"\n    client-certificate-data: "+b64(markCert)+"\n    password: "+markPass+"\n    tokenFile: "+markPath+"\n")
	for _, m := range allMarks {
		if !strings.Contains(in, m) && !strings.Contains(in, b64(m)) {
			t.Errorf("marker %d chars not planted", len(m))
		}
	}
}

func TestCredentialUnguessable(t *testing.T) {
	t.Parallel()
	key := b64("-----BEGIN EC PRIVATE KEY-----\n" + strings.Repeat("k", 64) + "\n-----END EC PRIVATE KEY-----\n")
	tests := map[string]struct {
		in   string
		want bool
	}{
		"private key":   {kc("ctx", httpsServer, "    client-certificate-data: "+b64(markCert)+"\n    client-key-data: "+key+"\n"), true},
		"long token":    {kc("ctx", httpsServer, "    token: "+strings.Repeat("x", 32)+"\n"), true},
		"short token":   {kc("ctx", httpsServer, "    token: "+markToken+"\n"), false},
		"basic auth":    {kc("ctx", httpsServer, "    username: a\n    password: "+markPass+"\n"), false},
		"exec":          {kc("ctx", httpsServer, "    exec: {command: x}\n"), false},
		"key not a key": {kc("ctx", httpsServer, "    client-key-data: "+b64(strings.Repeat("k", 80))+"\n"), false},
		"not yaml":      {"{{", false},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := CredentialUnguessable([]byte(tc.in)); got != tc.want {
				t.Errorf("CredentialUnguessable = %v, want %v", got, tc.want)
			}
		})
	}
}

// word finds runs of letters and digits that hold a letter.
var word = regexp.MustCompile(`[A-Za-z0-9]*[A-Za-z][A-Za-z0-9]*`)

// FuzzCheckKubeconfig: CheckKubeconfig and CredentialUnguessable never panic,
// and no error quotes the kubeconfig: every word of 4 letters or more in an
// error that is also in the input must be in kubeconfig.go, where the
// messages are written. Seeded with the examples' and golden cases'
// kubeconfigs and the cases above.
func FuzzCheckKubeconfig(f *testing.F) {
	var seeds []string
	for _, pattern := range []string{"../../examples/*/kubeconfigs/*.yaml", "testdata/golden/*/kubeconfigs/*.yaml", "testdata/golden/*/env/*"} {
		m, err := filepath.Glob(filepath.FromSlash(pattern))
		if err != nil {
			f.Fatal(err)
		}
		seeds = append(seeds, m...)
	}
	if len(seeds) < 3 {
		f.Fatalf("only %d seed kubeconfigs", len(seeds))
	}
	for _, p := range seeds {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(kc("nope", "    server: http://"+markServer+"\n    certificate-authority: /"+markPath+"\n", "    tokenFile: /"+markPath+"\n")))
	f.Add([]byte(strings.Replace(kc("ctx", httpsServer, "    token: "+markToken+"\n"), "user: u1", "user: u2", 1)))
	source, err := os.ReadFile("kubeconfig.go")
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		_ = CredentialUnguessable(data)
		err := CheckKubeconfig(data)
		if err == nil {
			return
		}
		for _, w := range word.FindAllString(err.Error(), -1) {
			if len(w) >= 4 && bytes.Contains(data, []byte(w)) && !bytes.Contains(source, []byte(w)) {
				t.Fatalf("error quotes the kubeconfig (%q):\n%v", w, err)
			}
		}
	})
}
