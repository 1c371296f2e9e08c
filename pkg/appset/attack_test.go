package appset

import (
	"strings"
	"testing"
	"time"
)

// TestBoundedTemplates: an ApplicationSet comes from a pull request, so a
// template that would make a huge sequence, repeat or indent, call a
// function whose result is not the input's, or pass an option
// text/template panics on, is named (not evaluated, or an error), in bounded
// time and memory, and never stops the preview of the others.
func TestBoundedTemplates(t *testing.T) {
	t.Parallel()
	clusters := []Cluster{{SecretName: "cluster-a", Name: "a", Server: "https://a.example", Labels: map[string]string{SecretTypeLabel: "cluster"}}}
	for name, tc := range map[string]struct {
		name    string
		options []any
		want    string // in NotEvaluated or Errors
	}{
		"until":     {name: `{{ range until 2000000000 }}x{{ end }}`, want: "makes more than 1000 items or 64 KiB (until)"},
		"untilStep": {name: `{{ range untilStep 0 2000000000 1 }}x{{ end }}`, want: "makes more than 1000 items or 64 KiB (untilStep)"},
		"seq":       {name: `{{ seq 2000000000 }}`, want: "makes more than 1000 items or 64 KiB (seq)"},
		"repeat":    {name: `{{ repeat 2000000000 "xxxxxxxx" }}`, want: "makes more than 1000 items or 64 KiB (repeat)"},
		"indent":    {name: `{{ indent 2000000000 "x" }}`, want: "indent by more than 64 KiB"},
		"output":    {name: `{{ range until 1000 }}{{ range until 1000 }}xxxxxxxxxxxxxxxx{{ end }}{{ end }}`, want: "renders more than 64 KiB"},
		"clock":     {name: `{{ now }}`, want: "the template function now"},
		"random":    {name: `{{ randAlpha 8 }}`, want: "the template function randAlpha"},
		"key":       {name: `{{ genPrivateKey "rsa" }}`, want: "the template function genPrivateKey"},
		"env":       {name: `{{ env "HOME" }}`, want: `function "env" not defined`},
		"option":    {name: `{{ .name }}`, options: []any{"missingkey=explode"}, want: `invalid goTemplateOptions "missingkey=explode"`},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			spec := map[string]any{
				"goTemplate": true,
				"generators": []any{map[string]any{"clusters": map[string]any{}}},
				"template": map[string]any{
					"metadata": map[string]any{"name": tc.name},
					"spec":     map[string]any{"project": "default", "destination": map[string]any{"server": "{{ .server }}"}},
				},
			}
			if tc.options != nil {
				spec["goTemplateOptions"] = tc.options
			}
			start := time.Now()
			p := Evaluate(map[string]any{"metadata": map[string]any{"name": "x", "namespace": "argocd"}, "spec": spec}, clusters)
			if d := time.Since(start); d > 10*time.Second {
				t.Errorf("took %s", d)
			}
			all := strings.Join(append(p.NotEvaluated, p.Errors...), "\n")
			if !strings.Contains(all, tc.want) {
				t.Errorf("NotEvaluated and Errors %q, want %q", all, tc.want)
			}
			for _, a := range p.Applications {
				if len(a.Name) > MaxOutput {
					t.Errorf("an Application name of %d bytes", len(a.Name))
				}
			}
		})
	}
}

// TestSealedClusterSecret: a cluster Secret whose values are SOPS
// ciphertext is said to be sealed, never read as a cluster.
func TestSealedClusterSecret(t *testing.T) {
	t.Parallel()
	obj := map[string]any{"apiVersion": "v1", "kind": "Secret",
		"metadata": map[string]any{"name": "cluster-a", "namespace": "argocd", "labels": map[string]any{SecretTypeLabel: "cluster"}},
		"data":     map[string]any{"name": "ENC[AES256_GCM,data:abc,type:str]", "server": "ENC[AES256_GCM,data:def,type:str]"}}
	if _, ok, sealed := ClusterFromSecret(obj); ok || !sealed {
		t.Errorf("ok %v, sealed %v: want a sealed Secret that is not read", ok, sealed)
	}
	obj["metadata"].(map[string]any)["labels"] = map[string]any{}
	if _, ok, _ := ClusterFromSecret(obj); ok {
		t.Error("a Secret without the cluster label read as a cluster")
	}
}

// TestTimeBound: nested loops that stay within every size bound but take
// long are abandoned at the time bound and named. Not parallel: it shortens
// the bound.
func TestTimeBound(t *testing.T) {
	defer func(d time.Duration) { maxTime = d }(maxTime)
	maxTime = 10 * time.Millisecond
	appSet := map[string]any{"spec": map[string]any{
		"goTemplate": true,
		"generators": []any{map[string]any{"list": map[string]any{"elements": []any{map[string]any{"a": "b"}}}}},
		"template": map[string]any{"metadata": map[string]any{
			"name": `{{ range until 1000 }}{{ range until 1000 }}{{ range until 50 }}{{ end }}{{ end }}{{ end }}x`}},
	}}
	p := Evaluate(appSet, nil)
	if len(p.Applications) != 0 || len(p.NotEvaluated) != 1 || !strings.Contains(p.NotEvaluated[0], "take more than 10ms") {
		t.Errorf("preview %+v, want only a note of the time bound", p)
	}
}
