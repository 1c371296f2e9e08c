package testenv

import (
	"os"
	"strings"
	"testing"
)

// ReplaceIn replaces old/new pairs in the file at path, each of which must
// occur.
func ReplaceIn(t testing.TB, path string, oldnew ...string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	for i := 0; i+1 < len(oldnew); i += 2 {
		if !strings.Contains(s, oldnew[i]) {
			t.Fatalf("%s has no %q", path, oldnew[i])
		}
		s = strings.ReplaceAll(s, oldnew[i], oldnew[i+1])
	}
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}
