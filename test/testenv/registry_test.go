package testenv

import (
	"net/http"
	"testing"
)

func TestRegistry(t *testing.T) {
	t.Parallel()
	host := Registry(t)
	resp, err := http.Get("http://" + host + "/v2/_catalog")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /v2/_catalog: %s", resp.Status)
	}
}
