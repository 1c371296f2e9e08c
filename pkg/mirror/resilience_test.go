package mirror_test

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"fleetgen.dev/fleetgen/pkg/mirror"
	"fleetgen.dev/fleetgen/pkg/schema"
	"fleetgen.dev/fleetgen/test/testenv"
)

// silent is a loopback listener that accepts connections and never reads or
// answers; it holds them until the test ends.
func silent(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu    sync.Mutex
		conns []net.Conn
	)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return ln.Addr().String()
}

var anon = mirror.WithKeychain(authn.NewMultiKeychain())

// TestRunSilentRegistryTimesOut: a target that accepts connections and never
// answers fails every pair in bounded time (timeouts, then bounded retries).
func TestRunSilentRegistryTimesOut(t *testing.T) {
	src := inProcess(t)
	refs := dataset(t, src)
	pairs, err := mirror.Plan(schema.Registry{Host: silent(t)}, refsOf(refs))
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	entries, _, err := mirror.Run(context.Background(), pairs, anon, mirror.WithBackoff(fastBackoff),
		mirror.WithTimeouts(mirror.Timeouts{Dial: time.Second, TLSHandshake: 100 * time.Millisecond, ResponseHeader: 100 * time.Millisecond}))
	elapsed := time.Since(start)
	if err == nil || len(entries) != 0 {
		t.Fatalf("Run against a silent registry: %d entries, err %v", len(entries), err)
	}
	if !strings.Contains(err.Error(), "timeout") {
		t.Errorf("error does not say it timed out:\n%v", err)
	}
	// Each request is tried 3 × 3 times (go-containerregistry retries the
	// request, and an upload as a whole), the ping over https and then http,
	// each try bounded at 100 ms: a few seconds at most, not forever.
	if elapsed > 5*time.Second {
		t.Errorf("took %s", elapsed)
	}
}

// TestRunStallCancelled: a run stuck on a stalling target stops promptly when
// its context is cancelled, even with the default (minute-long) timeouts.
func TestRunStallCancelled(t *testing.T) {
	src, dst := inProcess(t), inProcess(t)
	refs := dataset(t, src)
	proxy := testenv.StartProxy(t, dst, testenv.ProxyOptions{})
	proxy.SetStall(true)
	pairs, err := mirror.Plan(schema.Registry{Host: proxy.Host}, refsOf(refs))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(300*time.Millisecond, cancel)
	start := time.Now()
	_, _, err = mirror.Run(ctx, pairs, anon, mirror.WithJobs(1))
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
	if proxy.Injected() == 0 {
		t.Error("no request stalled")
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("Run took %s after a cancel at 300ms", d)
	}
}

// TestRunRetriesTruncatedUpload: an upload that reaches the registry one byte
// short (DIGEST_INVALID) is uploaded again, with a warning, and the mirror is
// intact; when every upload is cut, the run fails after bounded retries.
func TestRunRetriesTruncatedUpload(t *testing.T) {
	src, dst := inProcess(t), inProcess(t)
	refs := dataset(t, src)
	proxy := testenv.StartProxy(t, dst, testenv.ProxyOptions{})
	proxy.Truncate(2)
	pairs, err := mirror.Plan(schema.Registry{Host: proxy.Host}, refsOf(refs))
	if err != nil {
		t.Fatal(err)
	}
	var logs syncBuffer
	entries, _, err := mirror.Run(context.Background(), pairs, anon, mirror.WithBackoff(fastBackoff),
		mirror.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	if err != nil {
		t.Fatalf("Run with two truncated uploads: %v", err)
	}
	if proxy.Injected() != 2 {
		t.Errorf("%d uploads truncated, want 2", proxy.Injected())
	}
	if n := strings.Count(logs.String(), "uploading it again"); n != 2 {
		t.Errorf("%d warnings about a re-upload, want 2:\n%s", n, logs.String())
	}
	checkMirrored(t, direct(entries, proxy.Host, dst), refs)

	// Every upload cut: bounded retries, then DIGEST_INVALID is reported.
	dst2 := inProcess(t)
	proxy2 := testenv.StartProxy(t, dst2, testenv.ProxyOptions{})
	proxy2.Truncate(1 << 30)
	pairs2, err := mirror.Plan(schema.Registry{Host: proxy2.Host}, refsOf(refs))
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = mirror.Run(context.Background(), pairs2, anon, mirror.WithBackoff(fastBackoff))
	if err == nil || !strings.Contains(err.Error(), "DIGEST_INVALID") {
		t.Fatalf("err = %v, want DIGEST_INVALID", err)
	}
	// 3 tries per blob and repository (fastBackoff) at most: a blob no
	// upload completed cannot be mounted, so repositories that share it
	// each try it.
	if n := proxy2.Injected(); n > 3*int64(blobCount(t, refs)) {
		t.Errorf("%d truncated uploads: the retries are not bounded", n)
	}
}

// TestRunSurvivesClosedIdleConnections: a registry that drops keep-alive
// connections as they go idle costs retries, not the run.
func TestRunSurvivesClosedIdleConnections(t *testing.T) {
	src, dst := inProcess(t), inProcess(t)
	refs := dataset(t, src)
	proxy := testenv.StartProxy(t, dst, testenv.ProxyOptions{CloseIdle: 0.2, Seed: 3})
	pairs, err := mirror.Plan(schema.Registry{Host: proxy.Host}, refsOf(refs))
	if err != nil {
		t.Fatal(err)
	}
	entries, _, err := mirror.Run(context.Background(), pairs, anon,
		mirror.WithBackoff(remote.Backoff{Duration: time.Millisecond, Factor: 2, Steps: 8}))
	if err != nil {
		t.Fatalf("Run through a proxy that closes idle connections: %v", err)
	}
	if proxy.Injected() == 0 {
		t.Fatal("no connection was closed")
	}
	checkMirrored(t, direct(entries, proxy.Host, dst), refs)
}

// blobCount counts the distinct blobs (configs and layers) of refs' images,
// per repository.
func blobCount(t *testing.T, refs map[string]string) int {
	t.Helper()
	seen := map[string]bool{}
	var repo string
	add := func(img v1.Image) {
		m, err := img.Manifest()
		if err != nil {
			t.Fatal(err)
		}
		seen[repo+"@"+m.Config.Digest.String()] = true
		for _, l := range m.Layers {
			seen[repo+"@"+l.Digest.String()] = true
		}
	}
	for ref := range refs {
		repo = mustRef(t, ref).Context().String()
		desc, err := remote.Get(mustRef(t, ref))
		if err != nil {
			t.Fatal(err)
		}
		if !desc.MediaType.IsIndex() {
			img, err := desc.Image()
			if err != nil {
				t.Fatal(err)
			}
			add(img)
			continue
		}
		idx, err := desc.ImageIndex()
		if err != nil {
			t.Fatal(err)
		}
		m, err := idx.IndexManifest()
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range m.Manifests {
			img, err := idx.Image(c.Digest)
			if err != nil {
				t.Fatal(err)
			}
			add(img)
		}
	}
	return len(seen)
}

// syncBuffer is a strings.Builder safe for the logger's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
