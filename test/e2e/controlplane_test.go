package e2e_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"fleetgen.dev/fleetgen/test/testenv"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
)

// The programs test/e2e/tools/build.sh builds, by the part of the test that
// runs them.
var (
	controlPlaneBinaries = []string{"bin/etcd", "bin/kube-apiserver", "bin/kube-controller-manager", "bin/source-controller", "bin/kustomize-controller", helmController}
	fleetBinaries        = []string{"bin/fleetcontroller", "bin/fleetagent", "bin/helm", "charts/fleet/Chart.yaml"}
)

// tools locates the folder build.sh fills: $FLEETGEN_E2E_TOOLS, else the one
// `build.sh --dir` names.
func tools(t *testing.T) string {
	t.Helper()
	if dir := os.Getenv("FLEETGEN_E2E_TOOLS"); dir != "" {
		return dir
	}
	out, err := exec.Command("bash", "tools/build.sh", "--dir").Output()
	if err != nil {
		t.Fatalf("tools/build.sh --dir: %v", err)
	}
	return strings.TrimSpace(string(out))
}

// need skips the test when one of the binaries is missing from dir, except
// in CI, where .ci/run must have built it (testenv.Missing).
func need(t *testing.T, dir string, files []string) {
	t.Helper()
	for _, b := range files {
		if _, err := os.Stat(filepath.Join(dir, b)); err != nil {
			testenv.Missing(t, filepath.Join(dir, b), "`make e2e-tools` (test/e2e/tools/build.sh, about 40 CPU-minutes cold)")
		}
	}
}

// logDir is where every process of the run writes its log:
// $FLEETGEN_E2E_LOGS when set (kept), else a temporary folder.
func logDir(t *testing.T) string {
	if d := os.Getenv("FLEETGEN_E2E_LOGS"); d != "" {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		return d
	}
	return t.TempDir()
}

// proc is a program the test started; it is stopped when the test ends, and
// the tail of its log is printed when the test failed.
type proc struct {
	name   string
	cmd    *exec.Cmd
	log    string
	exited chan struct{}
}

func start(t *testing.T, logs, name, bin string, env []string, args ...string) *proc {
	t.Helper()
	return startFor(t, t, logs, name, bin, env, args...)
}

// startFor is start for a process that outlives the (sub)test t starting it:
// it runs until life ends.
func startFor(t, life *testing.T, logs, name, bin string, env []string, args ...string) *proc {
	t.Helper()
	p := &proc{name: name, log: filepath.Join(logs, name+".log"), exited: make(chan struct{})}
	f, err := os.Create(p.log)
	if err != nil {
		t.Fatal(err)
	}
	p.cmd = exec.Command(bin, args...)
	p.cmd.Stdout, p.cmd.Stderr = f, f
	p.cmd.Env = append(os.Environ(), env...)
	// Pdeathsig: a test binary killed by a timeout or ^C takes the control
	// plane with it instead of leaving it running.
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := p.cmd.Start(); err != nil {
		f.Close()
		t.Fatalf("start %s: %v", name, err)
	}
	f.Close()
	go func() { _ = p.cmd.Wait(); close(p.exited) }()
	life.Cleanup(func() {
		p.stop()
		if life.Failed() {
			life.Logf("--- last lines of %s:\n%s", p.log, tail(p.log, 25))
		}
	})
	return p
}

// stop ends the process group (SIGTERM, then SIGKILL after 5 s).
func (p *proc) stop() {
	select {
	case <-p.exited:
		return
	default:
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(5 * time.Second):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.exited
	}
}

func (p *proc) running() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// startEtcd starts one etcd member on loopback and returns its client URL.
// Every API server of the run shares it under its own key prefix.
func startEtcd(t *testing.T, bin, dir, logs string) string {
	t.Helper()
	client := fmt.Sprintf("http://127.0.0.1:%d", freePort(t))
	peer := fmt.Sprintf("http://127.0.0.1:%d", freePort(t))
	p := start(t, logs, "etcd", bin, nil,
		"--name=e2e", "--data-dir="+filepath.Join(dir, "etcd"),
		"--listen-client-urls="+client, "--advertise-client-urls="+client,
		"--listen-peer-urls="+peer, "--initial-advertise-peer-urls="+peer,
		"--initial-cluster=e2e="+peer, "--log-level=warn",
		// a test's data is thrown away: no fsync
		"--unsafe-no-fsync")
	if err := waitFor(p, 30*time.Second, func() error {
		resp, err := http.Get(client + "/health")
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("health: %s", resp.Status)
		}
		return nil
	}); err != nil {
		t.Fatalf("etcd: %v", err)
	}
	return client
}

// waitFor polls check until it returns nil, the process exits or time runs out.
func waitFor(p *proc, timeout time.Duration, check func() error) error {
	deadline := time.Now().Add(timeout)
	for {
		err := check()
		if err == nil {
			return nil
		}
		if p != nil && !p.running() {
			return fmt.Errorf("%s exited: %s", p.name, tail(p.log, 15))
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("after %s: %w", timeout, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// cluster is one kube-apiserver (with its controller-manager) and a client
// for it, authenticated as system:masters by a static token.
type cluster struct {
	name       string
	url        string
	caPEM      []byte
	token      string
	kubeconfig string // a kubeconfig file for the processes that use this cluster
	dir        string
	saKey      string
	api        *proc
	tools      string
	logs       string
	cfg        *rest.Config
	dyn        dynamic.Interface
	mapper     *restmapper.DeferredDiscoveryRESTMapper
}

// launchCluster starts kube-apiserver on loopback over etcd (key prefix
// /<name>), with its own CA and serving certificate; ready waits for it.
func launchCluster(t *testing.T, tools, etcd, logs, name string) *cluster {
	t.Helper()
	dir := filepath.Join(t.TempDir(), name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	c := &cluster{name: name, dir: dir, token: randHex(t, 16)}
	caPEM, certPEM, keyPEM := certs(t)
	c.caPEM = caPEM
	c.saKey = filepath.Join(dir, "sa.key")
	saPEM := ecKeyPEM(t)
	write(t, filepath.Join(dir, "ca.crt"), caPEM)
	write(t, filepath.Join(dir, "tls.crt"), certPEM)
	write(t, filepath.Join(dir, "tls.key"), keyPEM)
	write(t, c.saKey, saPEM)
	write(t, filepath.Join(dir, "tokens.csv"), []byte(c.token+`,e2e-admin,e2e-admin,"system:masters"`+"\n"))

	port := freePort(t)
	c.url = fmt.Sprintf("https://127.0.0.1:%d", port)
	c.kubeconfig = filepath.Join(dir, "kubeconfig")
	write(t, c.kubeconfig, kubeconfig(c.url, caPEM, c.token))
	api := start(t, logs, name+"-kube-apiserver", filepath.Join(tools, "bin", "kube-apiserver"), nil,
		"--etcd-servers="+etcd, "--etcd-prefix=/"+name,
		"--bind-address=127.0.0.1", "--advertise-address=127.0.0.1",
		fmt.Sprintf("--secure-port=%d", port), "--cert-dir="+dir,
		"--tls-cert-file="+filepath.Join(dir, "tls.crt"), "--tls-private-key-file="+filepath.Join(dir, "tls.key"),
		"--token-auth-file="+filepath.Join(dir, "tokens.csv"),
		"--authorization-mode=RBAC",
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file="+c.saKey, "--service-account-signing-key-file="+c.saKey,
		"--service-cluster-ip-range=10.96.0.0/24",
		"--enable-priority-and-fairness=false",
		"--endpoint-reconciler-type=none",
	)
	c.api = api
	c.tools, c.logs = tools, logs
	return c
}

// ready waits for /readyz, then starts kube-controller-manager with only the
// controllers a cluster without nodes needs: service-account tokens (Fleet's
// registration waits for them), namespace deletion and garbage collection,
// and Deployments' Pods (never scheduled: assertion 8 reads their images).
func (c *cluster) ready(t *testing.T) {
	t.Helper()
	caPEM := c.caPEM
	c.cfg = &rest.Config{
		Host:            c.url,
		BearerToken:     c.token,
		TLSClientConfig: rest.TLSClientConfig{CAData: caPEM},
		QPS:             100,
		Burst:           200,
	}
	hc, err := rest.HTTPClientFor(c.cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := waitFor(c.api, 120*time.Second, func() error {
		req, _ := http.NewRequest(http.MethodGet, c.url+"/readyz", nil)
		resp, err := hc.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("readyz: %s", resp.Status)
		}
		return nil
	}); err != nil {
		t.Fatalf("%s kube-apiserver: %v", c.name, err)
	}
	start(t, c.logs, c.name+"-kube-controller-manager", filepath.Join(c.tools, "bin", "kube-controller-manager"), nil,
		"--kubeconfig="+c.kubeconfig, "--authentication-kubeconfig="+c.kubeconfig, "--authorization-kubeconfig="+c.kubeconfig,
		"--bind-address=127.0.0.1", fmt.Sprintf("--secure-port=%d", freePort(t)),
		"--leader-elect=false", "--use-service-account-credentials=false",
		"--controllers=serviceaccount-token-controller,serviceaccount-controller,namespace-controller,garbage-collector-controller,deployment-controller,replicaset-controller",
		"--service-account-private-key-file="+c.saKey, "--root-ca-file="+filepath.Join(c.dir, "ca.crt"),
		"--cert-dir="+filepath.Join(c.dir, "kcm"),
	)

	c.dyn, err = dynamic.NewForConfig(c.cfg)
	if err != nil {
		t.Fatal(err)
	}
	dc, err := discovery.NewDiscoveryClientForConfig(c.cfg)
	if err != nil {
		t.Fatal(err)
	}
	c.mapper = restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))
}

// kubeconfig is a kubeconfig for url with the CA and a bearer token.
func kubeconfig(url string, caPEM []byte, token string) []byte {
	return []byte(fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: e2e
  cluster:
    server: %s
    certificate-authority-data: %s
users:
- name: e2e
  user:
    token: %s
contexts:
- name: e2e
  context: {cluster: e2e, user: e2e}
current-context: e2e
`, url, b64(caPEM), token))
}

// certs makes a CA and a serving certificate for 127.0.0.1 and localhost.
func certs(t *testing.T) (caPEM, certPEM, keyPEM []byte) {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	ca := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "fleetgen e2e CA"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatal(err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	leaf := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: "kube-apiserver"},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		DNSNames:     []string{"localhost", "kubernetes.default.svc"},
	}
	der, err := x509.CreateCertificate(rand.Reader, leaf, caCert, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
}

func ecKeyPEM(t *testing.T) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der})
}

func randHex(t *testing.T, n int) string {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%x", b)
}

func write(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// resource maps a GroupVersionKind to its resource, refreshing discovery once
// when the kind is new (a CRD just applied).
func (c *cluster) resource(gvk schema.GroupVersionKind) (dynamic.NamespaceableResourceInterface, bool, error) {
	m, err := c.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if meta.IsNoMatchError(err) {
		c.mapper.Reset()
		m, err = c.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	}
	if err != nil {
		return nil, false, err
	}
	return c.dyn.Resource(m.Resource), m.Scope.Name() == meta.RESTScopeNameNamespace, nil
}

// apply server-side applies every object of a multi-document YAML stream.
func (c *cluster) apply(ctx context.Context, manifests []byte) error {
	return c.applyIn(ctx, "", manifests)
}

// applyIn is apply with a default namespace for namespaced objects that name
// none, as `helm install --namespace` gives the objects `helm template`
// prints without one.
func (c *cluster) applyIn(ctx context.Context, ns string, manifests []byte) error {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(manifests), 4096)
	for {
		var obj unstructured.Unstructured
		if err := dec.Decode(&obj.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		if len(obj.Object) == 0 {
			continue
		}
		if obj.IsList() {
			if err := obj.EachListItem(func(o runtime.Object) error {
				u := o.(*unstructured.Unstructured)
				return c.applyOne(ctx, ns, u)
			}); err != nil {
				return err
			}
			continue
		}
		if err := c.applyOne(ctx, ns, &obj); err != nil {
			return err
		}
	}
}

func (c *cluster) applyOne(ctx context.Context, ns string, obj *unstructured.Unstructured) error {
	gvk := obj.GroupVersionKind()
	var err error
	for attempt := 0; attempt < 50; attempt++ {
		var r dynamic.NamespaceableResourceInterface
		var namespaced bool
		r, namespaced, err = c.resource(gvk)
		if err == nil {
			data, merr := obj.MarshalJSON()
			if merr != nil {
				return merr
			}
			ri := dynamic.ResourceInterface(r)
			if namespaced {
				if obj.GetNamespace() == "" {
					obj.SetNamespace(ns)
				}
				ri = r.Namespace(obj.GetNamespace())
			}
			_, err = ri.Patch(ctx, obj.GetName(), types.ApplyPatchType, data, metav1.PatchOptions{FieldManager: "e2e", Force: ptr(true)})
			if err == nil {
				return nil
			}
		}
		// A CRD applied a moment ago is not served yet: wait for it.
		if !meta.IsNoMatchError(err) && !apierrors.IsNotFound(err) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	return fmt.Errorf("apply %s %s/%s on %s: %w", gvk.Kind, obj.GetNamespace(), obj.GetName(), c.name, err)
}

// get reads one object; nil when it does not exist.
func (c *cluster) get(ctx context.Context, gvk schema.GroupVersionKind, ns, name string) (*unstructured.Unstructured, error) {
	r, namespaced, err := c.resource(gvk)
	if err != nil {
		return nil, err
	}
	ri := dynamic.ResourceInterface(r)
	if namespaced {
		ri = r.Namespace(ns)
	}
	obj, err := ri.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return obj, err
}

// list lists the objects of a kind in ns ("" for all namespaces).
func (c *cluster) list(ctx context.Context, gvk schema.GroupVersionKind, ns string) ([]unstructured.Unstructured, error) {
	r, namespaced, err := c.resource(gvk)
	if err != nil {
		return nil, err
	}
	ri := dynamic.ResourceInterface(r)
	if namespaced && ns != "" {
		ri = r.Namespace(ns)
	}
	l, err := ri.List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	return l.Items, nil
}

func ptr[T any](v T) *T { return &v }

func b64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }
