package schema

import (
	"os/exec"
	"strings"
	"testing"
)

// TestSameRepo: one repository, however it is spelled (issue 39, item 2):
// scheme, user, port, case, doubled and trailing slashes, dot segments,
// percent-encoding, .git, scp form, the ssh:// and https:// pair of a host.
func TestSameRepo(t *testing.T) {
	t.Parallel()
	const src = "ssh://git@github.com/contoso/fleet-gitops.git"
	for _, s := range []string{
		"https://github.com/contoso/fleet-gitops.git",
		"https://github.com/contoso/fleet-gitops",
		"http://github.com/contoso/fleet-gitops",
		"git://github.com/contoso/fleet-gitops.git",
		"git@github.com:contoso/fleet-gitops.git",
		"github.com:contoso/fleet-gitops",
		"https://GitHub.COM/Contoso/Fleet-GitOps.git",
		"https://github.com:443/contoso/fleet-gitops.git",
		"ssh://git@github.com:22/contoso/fleet-gitops.git",
		"https://github.com:8443/contoso/fleet-gitops.git",
		"https://user@github.com/contoso/fleet-gitops.git",
		"https://user:token@github.com/contoso/fleet-gitops.git",
		"https://github.com//contoso//fleet-gitops.git/",
		"https://github.com/contoso/fleet-gitops/",
		"https://github.com/contoso/./x/../fleet-gitops",
		"https://github.com/contoso/%66leet-gitops.git",
		"https://github.com/contoso%2Ffleet-gitops",
		"https://github.com./contoso/fleet-gitops",
		"https://github.com/contoso/fleet-gitops.git?ref=main#x",
		"  ssh://git@github.com/contoso/fleet-gitops.git  ",
	} {
		if !SameRepo(s, src) {
			t.Errorf("%s is not %s (identities %q, %q)", s, src, RepoIdentity(s), RepoIdentity(src))
		}
	}
	for _, s := range []string{
		"https://github.com/contoso/fleet-gitops-2.git",
		"https://github.com/contoso/fleet.git",
		"https://gitlab.com/contoso/fleet-gitops.git",
		"https://github.com/other/fleet-gitops.git",
		"https://github.com/contoso/fleet-gitops.git.git",
		"./fleet-gitops",
		"",
	} {
		if SameRepo(s, src) {
			t.Errorf("%s counts as %s", s, src)
		}
	}
}

// rulesFleet is a valid fleet whose spec.source.url is source, with a
// delivery (YAML, indented for its list) and a layer.
func rulesFleet(source, delivery, layer string) string {
	return `apiVersion: fleetgen.dev/v1alpha1
kind: Fleet
metadata: {name: x}
spec:
  registry: {host: r.example}
  source: {kind: git, url: "` + source + `", path: deploy}
  layers:
` + layer + `
  deliveries:
` + delivery + `
  defaults: {registration: capi}
  clusters:
    - name: c1
      labels: {env: clusters}
`
}

const okLayer = "    - {name: apps, path: ./apps}"

func validateRules(t *testing.T, data string) string {
	t.Helper()
	f, err := Parse("fleet.yaml", []byte(data))
	if err != nil {
		return err.Error()
	}
	Default(f)
	if err := Validate(f); err != nil {
		return err.Error()
	}
	return ""
}

// TestDeliveryRules: SPEC §1's rules on deliveries, each spelled more than
// one way (issue 39, item 2): an own-repo delivery may not scan the rendered
// tree whatever the URL's spelling; no credentials in a URL, no credential
// Secret over plain http, only valid Git refs, and a helmRepoURLRegex that is
// anchored and names its hosts.
func TestDeliveryRules(t *testing.T) {
	t.Parallel()
	const src = "ssh://git@git.contoso.example/platform/fleet.git"
	target := "      targets: [{name: all, clusterSelector: {}}]\n"
	for name, tc := range map[string]struct {
		delivery string
		want     string // "" valid
	}{
		"own repo over https scans the manager": {`    - name: d
      repo: https://git.contoso.example/platform/fleet.git
      paths: [deploy/manager]
` + target, "deploy/manager takes in deploy/manager/, fleetgen's rendered tree"},
		"own repo with port, user, case and slashes": {`    - name: d
      repo: https://someone@Git.Contoso.Example:443//platform/Fleet/
      bundles: [{base: deploy/clusters/c1}]
` + target, "takes in deploy/clusters/"},
		"own repo percent-encoded, scanning a glob over the tree": {`    - name: d
      repo: "git@git.contoso.example:platform/%66leet.git"
      paths: ["deploy/*"]
` + target, "deploy/* takes in deploy/manager/"},
		"own repo scanning a folder that holds the tree": {`    - name: d
      repo: git://git.contoso.example/platform/fleet
      paths: [deploy]
` + target, "deploy takes in deploy/manager/"},
		"a password in the URL": {`    - name: d
      repo: https://u:s3cr3t@git.example/x.git
      paths: [x]
` + target, "spec.deliveries[0].repo: invalid repo: it holds a password"},
		"a token as user name": {`    - name: d
      repo: https://ghp_abc@github.com/x/y.git
      paths: [x]
` + target, "it holds a user name, which forges take a token as"},
		"an ssh user is no credential": {`    - name: d
      repo: ssh://git@github.com/x/y.git
      paths: [x]
` + target, ""},
		"a credential Secret over http": {`    - name: d
      repo: http://git.example/x.git
      clientSecretName: creds
      paths: [x]
` + target, "spec.deliveries[0].clientSecretName: credential Secret \"creds\" for repo \"http://git.example/x.git\", which is plain http"},
		"a credential Secret over git://": {`    - name: d
      repo: git://git.example/x.git
      clientSecretName: creds
      paths: [x]
` + target, "which is plain git"},
		"a branch git refuses": {`    - name: d
      repo: https://git.example/x.git
      branch: "main..dev"
      paths: [x]
` + target, "spec.deliveries[0].branch: invalid branch \"main..dev\""},
		"a branch that is an option": {`    - name: d
      repo: https://git.example/x.git
      branch: "--upload-pack=x"
      paths: [x]
` + target, "invalid branch"},
		"a revision with a space": {`    - name: d
      repo: https://git.example/x.git
      revision: "v1 .0"
      paths: [x]
` + target, "spec.deliveries[0].revision: invalid revision"},
		"a revision ending in .lock": {`    - name: d
      repo: https://git.example/x.git
      revision: "refs/tags/v1.lock"
      paths: [x]
` + target, "invalid revision"},
		"a commit is a revision": {`    - name: d
      repo: https://git.example/x.git
      revision: 0123456789abcdef0123456789abcdef01234567
      paths: [x]
` + target, ""},
		"an unanchored helmRepoURLRegex": {`    - name: d
      repo: https://git.example/x.git
      paths: [x]
      helmSecretName: h
      helmRepoURLRegex: "oci://r\\.example/"
` + target, "it is not anchored at the start"},
		"an alternative that is not anchored": {`    - name: d
      repo: https://git.example/x.git
      paths: [x]
      helmSecretName: h
      helmRepoURLRegex: "^oci://r\\.example/|evil"
` + target, "it is not anchored at the start"},
		"any host": {`    - name: d
      repo: https://git.example/x.git
      paths: [x]
      helmSecretName: h
      helmRepoURLRegex: "^oci://.*"
` + target, "it admits any host"},
		"a host with anything after it": {`    - name: d
      repo: https://git.example/x.git
      paths: [x]
      helmSecretName: h
      helmRepoURLRegex: "^oci://r\\.example"
` + target, "it admits any host"},
		"a host in any case": {`    - name: d
      repo: https://git.example/x.git
      paths: [x]
      helmSecretName: h
      helmRepoURLRegex: "(?i)^oci://r\\.example/"
` + target, "it admits any host"},
		"http charts": {`    - name: d
      repo: https://git.example/x.git
      paths: [x]
      helmSecretName: h
      helmRepoURLRegex: "^http://charts\\.example/"
` + target, "it admits http:// chart URLs"},
		"two hosts, each named": {`    - name: d
      repo: https://git.example/x.git
      paths: [x]
      helmSecretName: h
      helmRepoURLRegex: "^(oci://r\\.example/|https://charts\\.example/)"
` + target, ""},
		"the default regex": {`    - name: d
      repo: https://git.example/x.git
      paths: [x]
      helmSecretName: h
` + target, ""},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got := validateRules(t, rulesFleet(src, tc.delivery, okLayer))
			if tc.want == "" && got != "" || tc.want != "" && !strings.Contains(got, tc.want) {
				t.Errorf("validate = %q, want %q", got, tc.want)
			}
			if strings.Contains(got, "s3cr3t") || strings.Contains(got, "ghp_abc") {
				t.Errorf("a message quotes the credential: %s", got)
			}
		})
	}
}

// TestLayerApartFromOutput: a layer path may not lie in the rendered tree
// or hold it (SPEC §6, issue 39 item 3), whether or not a cluster selects
// the layer and whatever a label expands it to.
func TestLayerApartFromOutput(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		layer, want string
	}{
		"the clusters folder, selecting no cluster": {"    - {name: l, path: ./deploy/clusters, selector: {env: none}}", "invalid path \"./deploy/clusters\": it lies in deploy/clusters/"},
		"the rendered manager tree":                 {"    - {name: l, path: ./deploy/manager}", "it lies in deploy/manager/"},
		"below the agents tree":                     {"    - {name: l, path: deploy//agents/c1/x}", "it lies in deploy/agents/"},
		"the folder that holds the tree":            {"    - {name: l, path: ./deploy}", "it holds deploy/manager/"},
		"the root":                                  {"    - {name: l, path: ./}", "it holds deploy/manager/"},
		"a variable below the tree":                 {"    - {name: l, path: \"./deploy/clusters/${env}\", selector: {env: none}}", "it lies in deploy/clusters/"},
		"a label that expands into the tree":        {"    - {name: l, path: \"./deploy/${env}\"}", "expands to \"./deploy/clusters\" for cluster \"c1\": it lies in deploy/clusters/"},
		"beside the tree":                           {"    - {name: l, path: ./deploy-apps}", ""},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got := validateRules(t, rulesFleet("https://git.example/x.git", "    []", tc.layer))
			if tc.want == "" && got != "" || tc.want != "" && !strings.Contains(got, tc.want) {
				t.Errorf("validate = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestGitRefFormat: gitRef accepts exactly the branch names git does (`git
// check-ref-format --branch`, the oracle), but "@", which git reads as HEAD's
// branch and a delivery cannot mean.
func TestGitRefFormat(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	dir := t.TempDir()
	for _, name := range []string{
		"main", "feature/x", "v1.0", "release-1.2", "a/-b", "x@y", "ünïcode",
		"0123456789abcdef0123456789abcdef01234567",
		"a..b", "a@{b", "a//b", "a/", "a.", ".a", "a/.b", "a.lock", "a/b.lock/c",
		"a b", "a~b", "a^b", "a:b", "a?b", "a*b", "a[b", `a\b`, "a\tb", "a\x7fb",
		"-x", "--upload-pack=x", "/x", "@{-1}",
	} {
		// Outside any repository: in one, git resolves "@{-1}" to the
		// branch checked out before (a developer's clone, not CI's).
		cmd := exec.Command("git", "check-ref-format", "--branch", name)
		cmd.Dir = dir
		gitSays := cmd.Run() == nil
		if ours := gitRef(name) == ""; ours != gitSays {
			t.Errorf("%q: gitRef accepts %v, git %v", name, ours, gitSays)
		}
	}
	if gitRef("@") == "" {
		t.Error(`gitRef accepts "@"`)
	}
}
