package mirror_test

import (
	"context"
	"fmt"
	"math/rand"
	"net/http"
	"strings"
	"sync"
	"testing"

	"fleetgen.dev/fleetgen/pkg/mirror"
	"fleetgen.dev/fleetgen/pkg/schema"
	"fleetgen.dev/fleetgen/test/testenv"
)

// loopbackOnly fails every request to a host off loopback and records it:
// Docker Hub is unreachable.
type loopbackOnly struct {
	mu      sync.Mutex
	refused []string
}

func (l *loopbackOnly) RoundTrip(req *http.Request) (*http.Response, error) {
	if !strings.HasPrefix(req.URL.Host, "127.0.0.1:") {
		l.mu.Lock()
		l.refused = append(l.refused, req.URL.Host)
		l.mu.Unlock()
		return nil, fmt.Errorf("dial %s: no route to host", req.URL.Host)
	}
	return http.DefaultTransport.RoundTrip(req)
}

// TestRunSourceMirrors: docker.io images (a short name, a namespaced one, one
// by digest) are read with their supply chain from the loopback mirror that
// spec.sourceMirrors names, below its prefix; no request goes to Docker Hub,
// and sources, targets and the lock name docker.io as before.
func TestRunSourceMirrors(t *testing.T) {
	t.Parallel()
	hub := inProcess(t)
	chain, err := testenv.SupplyChain(hub+"/dockerhub/library/busybox:1.36", rand.New(rand.NewSource(11)))
	if err != nil {
		t.Fatal(err)
	}
	refs := dataset(t, hub+"/dockerhub")
	var kured string
	for r, d := range refs {
		if strings.Contains(r, "kured") {
			kured = "docker.io/kubereboot/kured@" + d
		}
	}
	dst := inProcess(t)
	pairs, err := mirror.Plan(schema.Registry{Host: dst}, []string{"busybox:1.36", "docker.io/team/app:1.0", kured})
	if err != nil {
		t.Fatal(err)
	}
	guard := &loopbackOnly{}
	entries, _, err := mirror.Run(context.Background(), pairs, anon, mirror.WithBackoff(fastBackoff), mirror.WithTransport(guard),
		mirror.WithSourceMirrors([]mirror.SourceMirror{{Host: "docker.io", Mirror: hub + "/dockerhub"}}))
	if err != nil {
		t.Fatal(err)
	}
	if len(guard.refused) > 0 {
		t.Errorf("requests off loopback: %v", guard.refused)
	}
	want := map[string]string{
		"docker.io/library/busybox:1.36": chain.Index.String(),
		"docker.io/team/app:1.0":         refs[hub+"/dockerhub/team/app:1.0"],
		kured:                            strings.TrimPrefix(kured, "docker.io/kubereboot/kured@"),
	}
	for _, e := range entries {
		if want[e.Source] != e.Digest || !strings.HasPrefix(e.Target, dst+"/") {
			t.Errorf("entry %+v, want source digest %s on %s", e, want[e.Source], dst)
		}
		if e.Source == "docker.io/library/busybox:1.36" && len(e.Referrers) != 4 {
			t.Errorf("busybox referrers %+v, want 4", e.Referrers)
		}
	}
	if len(entries) != 3 {
		t.Errorf("%d entries, want 3", len(entries))
	}
}
