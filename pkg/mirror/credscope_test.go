package mirror_test

import (
	"context"
	"errors"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-containerregistry/pkg/registry"

	"fleetgen.dev/fleetgen/pkg/mirror"
	"fleetgen.dev/fleetgen/pkg/schema"
)

// blockedHTTPS plays a network attacker between fleetgen and the registry
// host registry.contoso.example: HTTPS to it never connects, plain HTTP
// reaches a registry that asks for basic auth. It records every plain HTTP
// request that carried an Authorization header.
type blockedHTTPS struct {
	reg http.Handler

	mu    sync.Mutex
	plain []string // plain HTTP requests that carried credentials
	https int
}

func (b *blockedHTTPS) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Scheme == "https" {
		b.mu.Lock()
		b.https++
		b.mu.Unlock()
		return nil, errors.New("dial tcp: connection refused")
	}
	if req.Header.Get("Authorization") != "" {
		b.mu.Lock()
		b.plain = append(b.plain, req.Method+" "+req.URL.String())
		b.mu.Unlock()
	}
	rec := httptest.NewRecorder()
	if req.Header.Get("Authorization") == "" {
		rec.Header().Set("WWW-Authenticate", `Basic realm="registry"`)
		rec.WriteHeader(http.StatusUnauthorized)
	} else {
		b.reg.ServeHTTP(rec, req)
	}
	res := rec.Result()
	res.Request = req
	return res, nil
}

// TestRunTargetCredentialsNeverCrossPlainHTTP is issue 26's family 3: a
// fleet whose target registry is reached over HTTPS and whose source mirror
// names the same host with insecure: true. Reading the source over plain HTTP
// must not carry FLEETGEN_REGISTRY_USERNAME/PASSWORD (WithTargetCredentials),
// which belong to the target as it is reached, over HTTPS. Before the fix
// the keychain matched the host alone and sent them in the clear. (Validate
// refuses such a fleet.yaml too: pkg/schema's golden case
// host-secure-and-insecure.)
func TestRunTargetCredentialsNeverCrossPlainHTTP(t *testing.T) {
	t.Setenv("DOCKER_CONFIG", t.TempDir()) // no user credentials
	const host = "registry.contoso.example"
	tr := &blockedHTTPS{reg: registry.New(registry.Logger(log.New(io.Discard, "", 0)))}
	pairs, err := mirror.Plan(schema.Registry{Host: host}, []string{"docker.io/library/busybox:1.36"})
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = mirror.Run(context.Background(), pairs,
		mirror.WithTransport(tr), mirror.WithBackoff(fastBackoff),
		mirror.WithTargetCredentials("ci-bot", "MARKER-password"),
		mirror.WithSourceMirrors([]mirror.SourceMirror{{Host: "docker.io", Mirror: host + "/dockerhub", Insecure: true}}))
	if err == nil {
		t.Fatal("mirror succeeded with HTTPS to the target refused")
	}
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if tr.https == 0 {
		t.Error("no HTTPS request was tried: the test does not exercise the target")
	}
	if len(tr.plain) > 0 {
		t.Errorf("target credentials sent over plain HTTP:\n  %s", strings.Join(tr.plain, "\n  "))
	}
	if strings.Contains(err.Error(), "MARKER") {
		t.Errorf("error quotes the password: %v", err)
	}
}
