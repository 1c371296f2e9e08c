package secrets

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"strings"
	"testing"

	"fleetgen.dev/fleetgen/pkg/layout"
	"github.com/getsops/sops/v3/logging"
	"github.com/sirupsen/logrus"
)

// leakMarkers are the credentials planted in the kubeconfigs of the leak test.
func leakMarkers(cluster string) (token, key, password string) {
	return "LEAKTOKEN" + strings.ToUpper(strings.ReplaceAll(cluster, "-", "")) + "q7Zr2",
		"LEAKKEY" + strings.ToUpper(strings.ReplaceAll(cluster, "-", "")) + "w9Xp4",
		"LEAKPASS" + strings.ToUpper(strings.ReplaceAll(cluster, "-", "")) + "k3Vm8"
}

func leakyKubeconfig(cluster string) []byte {
	token, key, password := leakMarkers(cluster)
	kc := string(fakeKubeconfig(cluster, token, key))
	// A second user with basic auth and a server URL with userinfo.
	kc = strings.Replace(kc, "server: https://", "server: https://admin:"+password+"@", 1)
	return []byte(kc + "- name: basic\n  user:\n    username: admin\n    password: " + password + "\n")
}

// needles returns what must never appear: each marker, its base64 encoding at
// all three alignments (the kubeconfig is base64-encoded in data.value; the
// client key is base64 inside that), and the whole kubeconfig in base64.
func needles(clusters []string) []string {
	var out []string
	for _, c := range clusters {
		token, key, password := leakMarkers(c)
		for _, m := range []string{token, key, password} {
			out = append(out, m)
			out = append(out, base64Variants(m)...)
			out = append(out, base64Variants(base64.StdEncoding.EncodeToString([]byte(m)))...)
		}
		out = append(out, base64.StdEncoding.EncodeToString(leakyKubeconfig(c)))
	}
	return out
}

func base64Variants(m string) []string {
	var out []string
	for pad := range 3 {
		enc := base64.StdEncoding.EncodeToString([]byte(strings.Repeat("\x00", pad) + m))
		lo := (pad*8+5)/6 + 1
		out = append(out, enc[lo:len(enc)-4])
	}
	return out
}

// captureSOPSLogs sends every SOPS logger, at debug level, to a buffer.
func captureSOPSLogs(t *testing.T) *bytes.Buffer {
	t.Helper()
	var buf bytes.Buffer
	for name, l := range logging.Loggers {
		out, level := l.Out, l.Level
		l.SetOutput(&buf)
		l.SetLevel(logrus.DebugLevel)
		t.Cleanup(func() { logging.Loggers[name].SetOutput(out); logging.Loggers[name].SetLevel(level) })
	}
	return &buf
}

func TestNoLeak(t *testing.T) {
	logs := captureSOPSLogs(t)
	clusters := []string{"prod-0", "prod-1", "prod-2"}
	files := fleetFiles(t, len(clusters), leakyKubeconfig)
	// Prove the needles work: they are all in the plaintext input.
	var in bytes.Buffer
	for _, f := range files {
		in.Write(f.Data)
	}
	for _, c := range clusters {
		if !bytes.Contains(in.Bytes(), []byte(base64.StdEncoding.EncodeToString(leakyKubeconfig(c)))) {
			t.Fatalf("test setup: %s kubeconfig not in the input", c)
		}
	}
	found := 0
	for _, n := range needles(clusters) {
		if bytes.Contains(in.Bytes(), []byte(n)) {
			found++
		}
	}
	if found == 0 {
		t.Fatal("test setup: no needle found in the plaintext input")
	}

	var texts []string // every error and log line produced
	enc := testSOPS(testRecipient)
	first, err := Seal(files, enc, nil)
	if err != nil {
		t.Fatal(err)
	}
	second, err := Seal(files, enc, previousOf(first))
	if err != nil {
		t.Fatal(err)
	}
	if err := Scan(second, false); err != nil {
		t.Fatal(err)
	}
	// Failures that see the credentials.
	if err := Scan(files, false); err != nil {
		texts = append(texts, err.Error())
	} else {
		t.Error("Scan passed plaintext")
	}
	broken := append([]layout.File{}, files...)
	for i := range broken {
		if broken[i].Secret {
			token, _, _ := leakMarkers("prod-0")
			broken[i].Data = []byte(layout.Header + "kind: Secret\ndata: {value: " + token + "\n  : [}")
		}
	}
	if _, err := Seal(broken, enc, nil); err != nil {
		texts = append(texts, err.Error())
	} else {
		t.Error("Seal took invalid YAML")
	}
	if err := Scan(broken, false); err != nil {
		texts = append(texts, err.Error())
	} else {
		t.Error("Scan took invalid YAML")
	}
	if _, err := Seal(files, testSOPS(testRecipient, "age1"+strings.Repeat("x", 10)), nil); err != nil {
		texts = append(texts, err.Error())
	}
	texts = append(texts, logs.String())

	var out bytes.Buffer
	for _, set := range [][]layout.File{first, second} {
		for _, f := range set {
			fmt.Fprintf(&out, "%s\n%s\n", f.Path, f.Data)
		}
	}
	haystacks := map[string]string{"output": out.String(), "errors and logs": strings.Join(texts, "\n")}
	for where, h := range haystacks {
		for _, n := range needles(clusters) {
			if strings.Contains(h, n) {
				t.Errorf("%s contain a planted credential (needle %d chars)", where, len(n))
			}
		}
	}
	if len(texts) < 4 {
		t.Errorf("expected 4 error texts, got %d", len(texts))
	}
}
