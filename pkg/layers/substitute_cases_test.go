package layers

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	"sigs.k8s.io/kustomize/api/provider"
)

// substitutionCases are Flux's post-build substitution rules, one case each.
// TestSubstitutionCases holds fleetgen to what each shows; with
// -tags fluxequal, TestFluxSubstitutionEqual runs every case through Flux's
// own SubstituteVariables too and requires the same object or error text.
// cluster=edge-1 is always defined, as in every Kustomization fleetgen
// renders.
var substitutionCases = map[string]struct {
	obj     string
	vars    map[string]string
	want    string // in the substituted YAML
	wantErr string // in the error
}{
	"plain": {
		obj:  "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata: {env: '${env}', name: '${cluster}'}\n",
		vars: map[string]string{"env": "prod"},
		want: "env: prod",
	},
	"unquoted": {
		obj:  "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata:\n  env: ${env}\n",
		vars: map[string]string{"env": "prod"},
		want: "env: prod",
	},
	"default := when unset": {
		obj:  "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata: {region: '${region:=eu}'}\n",
		want: "region: eu",
	},
	"default :- when empty": {
		obj:  "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata: {size: '${size:-small}'}\n",
		vars: map[string]string{"size": ""},
		want: "size: small",
	},
	"default = on an empty value": {
		obj:  "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata: {size: 'x${size=small}x'}\n",
		vars: map[string]string{"size": ""},
		want: "size: xsmallx",
	},
	"default nested": {
		obj:  "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata: {a: '${a:=${cluster}}'}\n",
		want: "a: edge-1",
	},
	"escape $${var}": {
		obj:  "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata: {script: 'echo $${HOME}'}\n",
		want: "echo ${HOME}",
	},
	"shell $$ and $VAR": {
		obj:  "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata: {script: 'echo $$ $HOME ${cluster}'}\n",
		want: "edge-1",
	},
	"strict: undefined fails": {
		obj:     "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata: {team: '${team}'}\n",
		wantErr: `variable not set (strict mode): "team"`,
	},
	"strict: length of undefined fails": {
		obj:     "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata: {n: '${#team}'}\n",
		wantErr: `variable not set (strict mode): "team"`,
	},
	"opt-out annotation": {
		obj:  "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, annotations: {kustomize.toolkit.fluxcd.io/substitute: disabled}}\ndata: {script: '${NOT_A_VAR}'}\n",
		want: "${NOT_A_VAR}",
	},
	"opt-out label": {
		obj:  "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, labels: {kustomize.toolkit.fluxcd.io/substitute: disabled}}\ndata: {script: '${NOT_A_VAR}'}\n",
		want: "${NOT_A_VAR}",
	},
	"opt-out needs the exact value": {
		obj:     "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, annotations: {kustomize.toolkit.fluxcd.io/substitute: Disabled}}\ndata: {script: '${NOT_A_VAR}'}\n",
		wantErr: "strict mode",
	},
	"kind from a variable": {
		obj:  "apiVersion: v1\nkind: ${k}\nmetadata: {name: a}\nstringData: {password: hunter2}\n",
		vars: map[string]string{"k": "Secret"},
		want: "kind: Secret",
	},
	"kind from part of a word": {
		obj:  "apiVersion: v1\nkind: Sec${x}\nmetadata: {name: a}\nstringData: {password: hunter2}\n",
		vars: map[string]string{"x": "ret"},
		want: "kind: Secret",
	},
	"variable in a key": {
		obj:  "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata: {'${k}': v}\n",
		vars: map[string]string{"k": "stringData"},
		want: "stringData: v",
	},
	"newlines removed from values": {
		obj:  "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata: {v: '${v}'}\n",
		vars: map[string]string{"v": "a\nb"},
		want: "v: ab",
	},
	"value that retypes a field": {
		obj:  "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata:\n  n: ${n}\n",
		vars: map[string]string{"n": "010"},
		want: "n:",
	},
	"value that breaks the YAML": {
		obj:     "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata:\n  v: ${v}\n",
		vars:    map[string]string{"v": "[unclosed"},
		wantErr: "YAMLToJSON",
	},
	"value that retypes a bool": {
		obj:  "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata: {v: x}\nimmutable: ${imm}\n",
		vars: map[string]string{"imm": "true"},
		want: "immutable: true",
	},
	"a value's newline cannot add a field": {
		obj:     "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata: {v: x}\nimmutable: ${imm}\n",
		vars:    map[string]string{"imm": "false\nstringData: {a: b}"},
		wantErr: "YAMLToJSON",
	},
	"a value in flow style nests": {
		obj:  "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata:\n  v: ${v}\n",
		vars: map[string]string{"v": "{stringData: x}"},
		want: "stringData: x",
	},
	"block scalar": {
		obj:  "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata:\n  conf: |\n    host=${cluster}.example\n    port=80\n",
		want: "host=edge-1.example",
	},
	"operators": {
		obj:  "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata: {u: '${env^^}', l: '${#env}', s: '${env:1:2}', r: '${env/o/0}'}\n",
		vars: map[string]string{"env": "prod"},
		want: "u: PROD",
	},
	"bad substitution": {
		obj:     "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata: {v: '${}'}\n",
		wantErr: "variable substitution failed",
	},
	"unclosed brace": {
		obj:     "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata: {v: '${cluster'}\n",
		wantErr: "variable substitution failed",
	},
	"invalid variable name": {
		obj:     "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata: {v: x}\n",
		vars:    map[string]string{"kubernetes.io/os": "linux"},
		wantErr: "is invalid",
	},
	"no variables: unchanged": {
		obj:  "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata: {v: '1.0', w: 'yes'}\n",
		want: "v: \"1.0\"",
	},
}

func TestSubstitutionCases(t *testing.T) {
	t.Parallel()
	rf := provider.NewDefaultDepProvider().GetResourceFactory()
	for name, tc := range substitutionCases {
		t.Run(name, func(t *testing.T) {
			rs, err := rf.SliceFromBytes([]byte(tc.obj))
			if err != nil || len(rs) != 1 {
				t.Fatalf("parse: %v", err)
			}
			res := rs[0]
			vars := map[string]string{"cluster": "edge-1"}
			for k, v := range tc.vars {
				vars[k] = v
			}
			text, err := res.AsYAML()
			if err != nil {
				t.Fatal(err)
			}
			out, err := substitute(newTemplate(string(text)), optsOut(res), vars)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one with %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if out == nil {
				if out, err = res.Map(); err != nil {
					t.Fatal(err)
				}
			}
			y, err := yaml.Marshal(out)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(y), tc.want) {
				t.Errorf("substituted object lacks %q:\n%s", tc.want, y)
			}
		})
	}
}

// TestFromYAML: the one-pass decoding of a substituted object is what
// Flux's two passes (sigs.k8s.io/yaml.YAMLToJSON, then JSON) make of it, for
// every case above and for YAML whose numbers, keys and scalars JSON
// reshapes; what it does not take goes the slow way.
func TestFromYAML(t *testing.T) {
	t.Parallel()
	texts := []string{
		"a: 1\nb: 1.0\nc: 1.5\nd: 1e3\ne: -0.0\nf: 1e-7\ng: 9223372036854775807\nh: 9223372036854775808\ni: 18446744073709551616\nj: 1e21\nk: 1e20\n",
		"yes: on\nno: off\nt: true\nn: ~\nempty:\ns: '1'\nts: 2001-12-14\nbin: !!binary aGk=\n",
		"1: int key\ntrue: bool key\nnested: {list: [1, 2.5, {x: y}], m: {}}\n",
		"a: &x {b: 1}\nc: *x\n<<: {d: 2}\n",
		"hex: 0x1F\noct: 0o17\nold: 017\nsci: 6.02e23\nneg: -12\n",
	}
	for _, tc := range substitutionCases {
		texts = append(texts, tc.obj)
	}
	for _, text := range texts {
		slow, err := yaml.YAMLToJSON([]byte(text))
		if err != nil {
			continue
		}
		want, err := decodeJSON(slow)
		if err != nil {
			continue
		}
		got, ok := fromYAML(text)
		if !ok {
			t.Errorf("fromYAML declines %q, which the slow way decodes", text)
			continue
		}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("%q (-slow +fromYAML):\n%s", text, d)
		}
	}
	for _, text := range []string{"1.5: float key\n", "a: .nan\n", "- a list\n", "a: [1\n"} {
		if _, ok := fromYAML(text); ok {
			t.Errorf("fromYAML takes %q", text)
		}
	}
}
