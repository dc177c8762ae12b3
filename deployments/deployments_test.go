package deployments_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/nats-io/nats-server/v2/conf"

	"github.com/carddrift/carddrift/store"
)

// account returns accounts.<name> of a parsed configuration.
func account(t *testing.T, cfg map[string]any, name string) map[string]any {
	t.Helper()
	accts, _ := cfg["accounts"].(map[string]any)
	a, ok := accts[name].(map[string]any)
	if !ok {
		t.Fatalf("accounts.conf: no account %s", name)
	}
	return a
}

// user returns the permissions of an account's only user, and its name.
func user(t *testing.T, acct map[string]any, name string) (string, map[string][]string) {
	t.Helper()
	users, _ := acct["users"].([]any)
	if len(users) != 1 {
		t.Fatalf("account %s: %d users, want 1", name, len(users))
	}
	return userAt(t, acct, name, 0)
}

// userAt returns the permissions of an account's i-th user, and its name.
func userAt(t *testing.T, acct map[string]any, name string, i int) (string, map[string][]string) {
	t.Helper()
	users, _ := acct["users"].([]any)
	if len(users) <= i {
		t.Fatalf("account %s: %d users, want %d or more", name, len(users), i+1)
	}
	u := users[i].(map[string]any)
	perms := map[string][]string{}
	p, _ := u["permissions"].(map[string]any)
	for _, dir := range []string{"publish", "subscribe"} {
		d, _ := p[dir].(map[string]any)
		if _, ok := d["deny"]; ok {
			t.Errorf("account %s: %s.deny: permissions are allow lists only", name, dir)
		}
		for _, s := range asList(d["allow"]) {
			perms[dir] = append(perms[dir], s)
		}
	}
	return u["user"].(string), perms
}

func asList(v any) []string {
	var out []string
	switch v := v.(type) {
	case string:
		out = append(out, v)
	case []any:
		for _, s := range v {
			out = append(out, s.(string))
		}
	}
	return out
}

// routeUser is the route identity: the subject of route.pem
// (tls/make-test-certs.sh), the cluster block's one user.
const routeUser = "CN=nats-route,O=carddrift"

// TestAccounts reads deployments/nats/accounts.conf as nats-server parses it
// and checks it against carddrift's default names (store.DefaultConfig): a
// renamed stream or bucket must be renamed in the permissions too.
func TestAccounts(t *testing.T) {
	for i := 1; i <= 3; i++ {
		cfg, err := conf.ParseFile(fmt.Sprintf("nats/nats-%d.conf", i))
		if err != nil {
			t.Fatalf("nats-%d.conf: %v", i, err)
		}
		tls, _ := cfg["tls"].(map[string]any)
		if tls["verify_and_map"] != true {
			t.Errorf("nats-%d.conf: client TLS without verify_and_map", i)
		}
		// Routes are their own identity: another CA than the clients', and the
		// route certificate's subject mapped to the one route user.
		cluster, _ := cfg["cluster"].(map[string]any)
		ctls, _ := cluster["tls"].(map[string]any)
		if ctls["verify_and_map"] != true {
			t.Errorf("nats-%d.conf: routes without verify_and_map (any certificate of the CA joins)", i)
		}
		if ctls["ca_file"] == tls["ca_file"] || !strings.HasSuffix(fmt.Sprint(ctls["ca_file"]), "/route-ca.pem") {
			t.Errorf("nats-%d.conf: cluster ca_file %v, want the route CA (route-ca.pem), not the clients' %v", i, ctls["ca_file"], tls["ca_file"])
		}
		if !strings.HasSuffix(fmt.Sprint(ctls["cert_file"]), "/route.pem") {
			t.Errorf("nats-%d.conf: routes present %v, want route.pem", i, ctls["cert_file"])
		}
		cauth, _ := cluster["authorization"].(map[string]any)
		if cauth["user"] != routeUser || cauth["password"] != nil || cauth["users"] != nil {
			t.Errorf("nats-%d.conf: cluster authorization %v, want only user %q", i, cauth, routeUser)
		}
		// No other door: monitoring on loopback, no leafnode, gateway,
		// websocket or MQTT listener.
		if h := fmt.Sprint(cfg["http"]); !strings.HasPrefix(h, "127.0.0.1:") {
			t.Errorf("nats-%d.conf: monitoring on %s, want loopback", i, h)
		}
		for _, k := range []string{"leafnodes", "leaf", "gateway", "websocket", "ws", "mqtt", "https", "http_port", "https_port", "monitor_port"} {
			if _, ok := cfg[k]; ok {
				t.Errorf("nats-%d.conf: %s listener", i, k)
			}
		}
		for _, k := range []string{"authorization", "no_auth_user", "users"} {
			if _, ok := cfg[k]; ok {
				t.Errorf("nats-%d.conf: %s outside the accounts", i, k)
			}
		}
	}
	cfg, err := conf.ParseFile("nats/accounts.conf")
	if err != nil {
		t.Fatal(err)
	}
	c := store.DefaultConfig()
	prefix := func(s string) string { return strings.TrimSuffix(s, ".>") }

	carddrift := account(t, cfg, "CARDDRIFT")
	if carddrift["jetstream"] != "enabled" {
		t.Errorf("CARDDRIFT: jetstream %v, want enabled", carddrift["jetstream"])
	}
	name, perms := user(t, carddrift, "CARDDRIFT")
	if name != "CN=carddrift,O=carddrift" {
		t.Errorf("CARDDRIFT user %q", name)
	}
	objectPurge := "$JS.API.STREAM.PURGE.OBJ_" + c.CardsObjectBucket
	streams := []string{c.LifecycleStream, c.EventsStream, c.DLQStream,
		"KV_" + c.PinsBucket, "KV_" + c.CardsBucket, "KV_" + c.LeasesBucket, "OBJ_" + c.CardsObjectBucket}
	want := []string{"$JS.API.INFO", c.EventsSubjects, c.DLQSubjects,
		"$JS.API.CONSUMER.CREATE." + c.LifecycleStream + ".>", "$JS.API.CONSUMER.MSG.NEXT." + c.LifecycleStream + ".*",
		"$JS.ACK." + c.LifecycleStream + ".>", "$O." + c.CardsObjectBucket + ".>",
		// nats.go's object Put purges one chunk subject after a failed
		// upload and after a replace (store's TestObjectPutsUnderShippedPermissions)
		objectPurge}
	for _, s := range streams {
		want = append(want, "$JS.API.STREAM.INFO."+s, "$JS.API.STREAM.CREATE."+s, "$JS.API.STREAM.UPDATE."+s)
	}
	for _, b := range []string{c.PinsBucket, c.CardsBucket, c.LeasesBucket} {
		want = append(want, "$KV."+b+".>", "$JS.API.DIRECT.GET.KV_"+b+".>")
	}
	for _, w := range want {
		if !slices.Contains(perms["publish"], w) {
			t.Errorf("CARDDRIFT may not publish %s", w)
		}
	}
	for _, p := range perms["publish"] {
		if p == ">" || p == "$JS.API.>" || strings.Contains(p, ".DELETE."+c.LifecycleStream) || strings.Contains(p, "STREAM.DELETE") ||
			strings.Contains(p, "STREAM.PURGE") && p != objectPurge || strings.HasPrefix(p, prefix(c.LifecycleSubjects)) {
			t.Errorf("CARDDRIFT may publish %s: more than it needs", p)
		}
	}
	if !slices.Equal(perms["subscribe"], []string{"_INBOX.>"}) {
		t.Errorf("CARDDRIFT subscribe %v, want [_INBOX.>]", perms["subscribe"])
	}

	clients := account(t, cfg, "CLIENTS")
	name, perms = user(t, clients, "CLIENTS")
	if name != "CN=a2a-client,O=carddrift" || !slices.Equal(perms["publish"], []string{c.LifecycleSubjects}) ||
		!slices.Equal(perms["subscribe"], []string{"_INBOX.>"}) {
		t.Errorf("CLIENTS user %q: %v, want publish [%s] and subscribe [_INBOX.>]", name, perms, c.LifecycleSubjects)
	}
	if _, ok := clients["jetstream"]; ok {
		t.Error("CLIENTS has JetStream of its own")
	}

	// Planners consume their own copy of the card stream in their own
	// account (a push consumer's deliver subject is then a subject of
	// PLANNERS, never of CARDDRIFT), under the prefix they have always used.
	planners := account(t, cfg, "PLANNERS")
	if users, _ := planners["users"].([]any); len(users) != 2 {
		t.Fatalf("PLANNERS: %d users, want the planner and planners-admin", len(users))
	}
	name, perms = userAt(t, planners, "PLANNERS", 0)
	if name != "CN=planner,O=carddrift" || !slices.Equal(perms["subscribe"], []string{c.EventsSubjects, "_INBOX.>"}) {
		t.Errorf("PLANNERS user %q subscribe %v", name, perms["subscribe"])
	}
	for _, p := range perms["publish"] {
		if !strings.Contains(p, "."+c.EventsStream) || strings.Contains(p, "STREAM.CREATE") || strings.Contains(p, "STREAM.UPDATE") ||
			strings.HasPrefix(p, "JS.") {
			t.Errorf("PLANNERS user may publish %s: not only consumers of its own %s", p, c.EventsStream)
		}
	}
	name, perms = userAt(t, planners, "PLANNERS", 1)
	if name != "CN=planners-admin,O=carddrift" || !slices.Equal(perms["subscribe"], []string{"_INBOX.>"}) {
		t.Errorf("PLANNERS second user %q subscribe %v, want planners-admin, _INBOX.>", name, perms["subscribe"])
	}
	for _, p := range perms["publish"] {
		if p != "$JS.API.INFO" && !strings.HasSuffix(p, "."+c.EventsStream) {
			t.Errorf("planners-admin may publish %s: more than its one stream", p)
		}
	}
	if js, _ := planners["jetstream"].(map[string]any); js == nil || js["max_streams"] != int64(1) {
		t.Errorf("PLANNERS jetstream %v, want its own, limited to one stream", planners["jetstream"])
	}
	if m, _ := planners["mappings"].(map[string]any); m["JS.carddrift.API.>"] != "$JS.API.>" {
		t.Errorf("PLANNERS mappings %v: the planners' prefix JS.carddrift.API must map onto their own JetStream", planners["mappings"])
	}
	// What PLANNERS imports of carddrift's JetStream is under a prefix the
	// planner user may not publish on: only the account's JetStream (the
	// source of its stream) reaches it.
	for _, im := range planners["imports"].([]any) {
		svc, _ := im.(map[string]any)["service"].(map[string]any)
		if svc == nil {
			continue
		}
		to, _ := im.(map[string]any)["to"].(string)
		if subj, _ := svc["subject"].(string); strings.HasPrefix(subj, "$JS.API.") && !strings.HasPrefix(to, "JS.carddrift-source.API.") {
			t.Errorf("PLANNERS imports %s as %q: carddrift's JetStream API only under JS.carddrift-source.API", subj, to)
		}
	}
	// The planners' stream sources carddrift's through exactly that prefix.
	b, err := os.ReadFile("nats/planners-card-events.json")
	if err != nil {
		t.Fatal(err)
	}
	var ps struct {
		Name     string   `json:"name"`
		Subjects []string `json:"subjects"`
		MaxBytes int64    `json:"max_bytes"`
		Sources  []struct {
			Name     string `json:"name"`
			External struct {
				API     string `json:"api"`
				Deliver string `json:"deliver"`
			} `json:"external"`
		} `json:"sources"`
	}
	if err := json.Unmarshal(b, &ps); err != nil {
		t.Fatal(err)
	}
	if ps.Name != c.EventsStream || len(ps.Subjects) != 0 || ps.MaxBytes <= 0 || len(ps.Sources) != 1 ||
		ps.Sources[0].Name != c.EventsStream || ps.Sources[0].External.API != "JS.carddrift-source.API" ||
		ps.Sources[0].External.Deliver != "carddrift.planners" {
		t.Errorf("nats/planners-card-events.json: %+v", ps)
	}
	if cfg["system_account"] != "SYS" {
		t.Errorf("system_account %v", cfg["system_account"])
	}
}

// TestNATSValuesEmbedAccounts: the official chart's values carry
// accounts.conf byte for byte, so that Kubernetes gets the permissions the
// cluster test runs.
func TestNATSValuesEmbedAccounts(t *testing.T) {
	values, err := os.ReadFile("helm/nats-values.yaml")
	if err != nil {
		t.Fatal(err)
	}
	accounts, err := os.ReadFile("nats/accounts.conf")
	if err != nil {
		t.Fatal(err)
	}
	const key = "      accounts.conf: |\n"
	_, block, ok := strings.Cut(string(values), key)
	if !ok {
		t.Fatalf("helm/nats-values.yaml has no %q", strings.TrimSpace(key))
	}
	var got strings.Builder
	for _, line := range strings.SplitAfter(block, "\n") {
		if line == "" {
			break
		}
		if strings.TrimSpace(line) == "" {
			got.WriteString("\n")
			continue
		}
		rest, ok := strings.CutPrefix(line, "        ")
		if !ok {
			break
		}
		got.WriteString(rest)
	}
	if got.String() != string(accounts) {
		t.Errorf("helm/nats-values.yaml's accounts.conf differs from nats/accounts.conf; regenerate it:\n" +
			"  sed 's/^/        /; s/^ *$//' deployments/nats/accounts.conf")
	}
	checkContains(t, "helm/nats-values.yaml", string(values), "verify_and_map: true", "replicas: 3", "zzz$include: ./accounts.conf",
		"secretName: nats-route-tls", "ca_file: /etc/nats-certs/cluster/ca.crt", `user: "`+routeUser+`"`,
		"kind: NetworkPolicy", "- ports: [{port: 6222, protocol: TCP}]", "- ports: [{port: 8222, protocol: TCP}]")
	for _, open := range []string{"leafnodes:", "gateway:", "websocket:", "mqtt:", "promExporter:"} {
		if strings.Contains(string(values), open) {
			t.Errorf("helm/nats-values.yaml configures %s: a port the NetworkPolicy does not cover", open)
		}
	}
}

var envRe = regexp.MustCompile(`CARDDRIFT_[A-Z_]+`)

// TestEnvNamesAreServeFlags: every CARDDRIFT_* variable the deployments set
// names a flag of carddrift serve (a misspelt one would be ignored).
func TestEnvNamesAreServeFlags(t *testing.T) {
	var src bytes.Buffer
	for _, f := range []string{"../cmd/carddrift/serve.go", "../cmd/carddrift/natsconn.go"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		src.Write(b)
	}
	for _, f := range []string{"compose.yaml", "kubernetes/carddrift.yaml", "helm/carddrift/templates/deployment.yaml"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		names := envRe.FindAllString(string(b), -1)
		if len(names) == 0 {
			t.Errorf("%s sets no CARDDRIFT_* variable", f)
		}
		for _, n := range names {
			flag := strings.ReplaceAll(strings.ToLower(strings.TrimPrefix(n, "CARDDRIFT_")), "_", "-")
			if !bytes.Contains(src.Bytes(), []byte(`"`+flag+`"`)) {
				t.Errorf("%s: %s is no flag of carddrift serve (--%s)", f, n, flag)
			}
		}
	}
}

// TestComposeMountsWhatConfigsName: compose mounts every file the NATS
// configurations read, and gives carddrift its own certificate only.
func TestComposeMountsWhatConfigsName(t *testing.T) {
	b, err := os.ReadFile("compose.yaml")
	if err != nil {
		t.Fatal(err)
	}
	compose := string(b)
	for i := 1; i <= 3; i++ {
		checkContains(t, "compose.yaml's mounts", compose,
			fmt.Sprintf("./nats/nats-%d.conf:/etc/nats/nats.conf:ro", i),
			"./nats/accounts.conf:/etc/nats/accounts.conf:ro",
			"./tls/certs/server.pem:/etc/nats/tls/server.pem:ro",
			"./tls/certs/server-key.pem:/etc/nats/tls/server-key.pem:ro",
			"./tls/certs/ca.pem:/etc/nats/tls/ca.pem:ro",
			"./tls/certs/route-ca.pem:/etc/nats/tls/route-ca.pem:ro",
			"./tls/certs/route.pem:/etc/nats/tls/route.pem:ro",
			"./tls/certs/route-key.pem:/etc/nats/tls/route-key.pem:ro",
		)
	}
	// Monitoring is read inside the containers, never published; carddrift's
	// HTTP port (no login) only on the host's loopback.
	checkContains(t, "compose.yaml", compose, `http://127.0.0.1:8222/healthz`, `ports: ["127.0.0.1::9464"]`)
	for _, open := range []string{"8222:", `"8222"`, `"9464"`, "9464:9464", "6222:"} {
		if strings.Contains(compose, open) {
			t.Errorf("compose.yaml publishes %s", open)
		}
	}
	for _, other := range []string{"client-key.pem", "planner-key.pem", "admin-key.pem", "ca-key.pem", "route-ca-key.pem"} {
		if strings.Contains(compose, other) {
			t.Errorf("compose.yaml mounts %s", other)
		}
	}
}

// helmBinary returns CARDDRIFT_HELM_BIN or helm on PATH; without either the
// test skips locally and fails under CI (.ci/run installs helm).
func helmBinary(t *testing.T) string {
	t.Helper()
	if bin := os.Getenv("CARDDRIFT_HELM_BIN"); bin != "" {
		return bin
	}
	if bin, err := exec.LookPath("helm"); err == nil {
		return bin
	}
	if os.Getenv("CI") != "" {
		t.Fatal("helm not found (CARDDRIFT_HELM_BIN or PATH): .ci/run installs it")
	}
	t.Skip("helm not found: go install helm.sh/helm/v3/cmd/helm@v3.22.0, or set CARDDRIFT_HELM_BIN")
	return ""
}

func helm(t *testing.T, bin string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+t.TempDir(), "HELM_CONFIG_HOME="+t.TempDir(), "HELM_DATA_HOME="+t.TempDir())
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if err != nil {
		return out.String(), fmt.Errorf("helm %s: %v: %s", strings.Join(args, " "), err, errb.String())
	}
	return out.String(), nil
}

// docs splits rendered manifests by kind.
func docs(out string) map[string]string {
	m := map[string]string{}
	for _, d := range strings.Split(out, "\n---\n") {
		if _, kind, ok := strings.Cut(d, "\nkind: "); ok {
			kind, _, _ = strings.Cut(kind, "\n")
			m[kind] = d
		}
	}
	return m
}

func TestHelmChart(t *testing.T) {
	bin := helmBinary(t)
	const chart = "helm/carddrift"
	if out, err := helm(t, bin, "lint", "--strict", chart); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}

	out, err := helm(t, bin, "template", "cd", chart, "--namespace", "carddrift")
	if err != nil {
		t.Fatal(err)
	}
	m := docs(out)
	for _, kind := range []string{"Deployment", "Service", "ServiceAccount", "PodDisruptionBudget"} {
		if m[kind] == "" {
			t.Errorf("default values render no %s", kind)
		}
	}
	if m["ServiceMonitor"] != "" {
		t.Error("a ServiceMonitor by default (it needs the prometheus-operator CRDs)")
	}
	// The HTTP port has no login: a NetworkPolicy on the workers' pods admits
	// no peer by default, and the peers of networkPolicy.httpFrom on that
	// port only.
	np := m["NetworkPolicy"]
	checkContains(t, "NetworkPolicy", np,
		"podSelector:\n    matchLabels:\n      app.kubernetes.io/name: carddrift\n      app.kubernetes.io/instance: cd",
		"policyTypes: [Ingress]", "ingress: []")
	checkContains(t, "Deployment's pod labels (what the NetworkPolicy selects)", m["Deployment"],
		"labels:\n        app.kubernetes.io/name: carddrift\n        app.kubernetes.io/instance: cd")
	out, err = helm(t, bin, "template", "cd", chart, "--set", "networkPolicy.httpFrom[0].podSelector.matchLabels.app=prometheus")
	if err != nil {
		t.Fatal(err)
	}
	checkContains(t, "NetworkPolicy with httpFrom", docs(out)["NetworkPolicy"],
		"ingress:\n    - ports:\n        - port: http-metrics\n          protocol: TCP\n      from:\n        - podSelector:\n            matchLabels:\n              app: prometheus")
	out, err = helm(t, bin, "template", "cd", chart, "--set", "networkPolicy.enabled=false")
	if err != nil {
		t.Fatal(err)
	}
	if docs(out)["NetworkPolicy"] != "" {
		t.Error("a NetworkPolicy although networkPolicy.enabled=false")
	}
	dep := m["Deployment"]
	checkContains(t, "Deployment", dep,
		"replicas: 2",
		`args: ["serve"]`,
		// NATS: URL, carddrift's own certificate, replicas 3
		"- name: CARDDRIFT_NATS_URL\n              value: \"tls://nats:4222\"",
		"- name: CARDDRIFT_TLS_CERT\n              value: \"/etc/carddrift/nats-tls/tls.crt\"",
		"- name: CARDDRIFT_TLS_KEY\n              value: \"/etc/carddrift/nats-tls/tls.key\"",
		"- name: CARDDRIFT_TLS_CA\n              value: \"/etc/carddrift/nats-tls/ca.crt\"",
		"- name: CARDDRIFT_REPLICAS\n              value: \"3\"",
		"- name: CARDDRIFT_HTTP_ADDR\n              value: \"0.0.0.0:9464\"",
		"fieldPath: metadata.name",
		"secretName: carddrift-nats-tls",
		// Prometheus scrape, probes on --http-addr
		"prometheus.io/scrape: \"true\"", "prometheus.io/port: \"9464\"", "prometheus.io/path: /metrics",
		"readinessProbe:\n            httpGet:\n              path: /readyz\n              port: http-metrics",
		"livenessProbe:\n            httpGet:\n              path: /healthz\n              port: http-metrics",
		"containerPort: 9464",
		// resources and a locked-down pod
		"resources:\n            limits:\n              memory: 512Mi\n            requests:\n              cpu: 100m",
		"readOnlyRootFilesystem: true", "runAsNonRoot: true", "automountServiceAccountToken: false",
	)
	if strings.Contains(dep, "CARDDRIFT_CREDS") {
		t.Error("CARDDRIFT_CREDS without a credentials secret")
	}

	// Values: a credentials secret, replicas, resources, no scrape annotations.
	out, err = helm(t, bin, "template", "cd", chart,
		"--set", "nats.credentials.secretName=carddrift-creds", "--set", "nats.url=tls://nats-a:4222\\,tls://nats-b:4222",
		"--set", "replicaCount=4", "--set", "streams.replicas=5", "--set", "resources.limits.memory=1Gi",
		"--set", "metrics.scrapeAnnotations=false", "--set", "metrics.serviceMonitor.enabled=true",
		"--set", "fetch.allow=10.0.0.0/8")
	if err != nil {
		t.Fatal(err)
	}
	m = docs(out)
	dep = m["Deployment"]
	checkContains(t, "Deployment with values", dep,
		"replicas: 4",
		"- name: CARDDRIFT_CREDS\n              value: \"/etc/carddrift/nats-creds/nats.creds\"",
		"secretName: carddrift-creds",
		"value: \"tls://nats-a:4222,tls://nats-b:4222\"",
		"- name: CARDDRIFT_REPLICAS\n              value: \"5\"",
		"- name: CARDDRIFT_FETCH_ALLOW\n              value: \"10.0.0.0/8\"",
		"memory: 1Gi",
	)
	if strings.Contains(dep, "prometheus.io/scrape") {
		t.Error("scrape annotations although metrics.scrapeAnnotations=false")
	}
	if !strings.Contains(m["ServiceMonitor"], "path: /metrics") {
		t.Error("no ServiceMonitor although metrics.serviceMonitor.enabled=true")
	}

	// No identity, no deployment: carddrift never connects anonymously.
	_, err = helm(t, bin, "template", "cd", chart, "--set", "nats.tls.secretName=")
	if err == nil || !strings.Contains(err.Error(), "its own identity") {
		t.Errorf("rendered without TLS secret or credentials: %v", err)
	}
}

// TestNATSValuesRenderWithOfficialChart renders helm/nats-values.yaml with
// the official NATS chart and has nats-server check the configuration it
// produces. It needs a copy of the chart (CARDDRIFT_NATS_CHART: the
// directory helm/charts/nats of github.com/nats-io/k8s, or `helm pull
// nats/nats --untar`) and runs only when it is set.
func TestNATSValuesRenderWithOfficialChart(t *testing.T) {
	chart := os.Getenv("CARDDRIFT_NATS_CHART")
	if chart == "" {
		t.Skip("CARDDRIFT_NATS_CHART not set (a local copy of the official nats chart)")
	}
	bin := helmBinary(t)
	out, err := helm(t, bin, "template", "nats", chart, "-f", "helm/nats-values.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cm := docs(out)["ConfigMap"]
	checkContains(t, "rendered ConfigMap", cm, `"verify_and_map": true`, "include ./accounts.conf;",
		"tls://nats-2.nats-headless:6222", "accounts.conf: |",
		`"ca_file": "/etc/nats-certs/cluster/ca.crt"`, `"user": "`+routeUser+`"`)
	if strings.Contains(cm, `"leafnodes"`) || strings.Contains(cm, `"gateway"`) || strings.Contains(cm, `"websocket"`) || strings.Contains(cm, `"mqtt"`) {
		t.Error("the rendered configuration opens a leafnode, gateway, websocket or MQTT port")
	}
	checkContains(t, "rendered NetworkPolicy", docs(out)["NetworkPolicy"], "app.kubernetes.io/component: nats", "port: 6222", "port: 8222",
		`carddrift.io/nats-monitoring: "true"`)
	natsBin := os.Getenv("CARDDRIFT_NATS_SERVER_BIN")
	if natsBin == "" {
		return
	}
	// nats.conf and accounts.conf out of the ConfigMap, with local files.
	dir := t.TempDir()
	natsConf, accounts := literal(cm, "  nats.conf: |"), literal(cm, "  accounts.conf: |")
	certs := t.TempDir()
	if b, err := exec.Command("bash", "tls/make-test-certs.sh", certs).CombinedOutput(); err != nil {
		t.Fatalf("make-test-certs.sh: %v\n%s", err, b)
	}
	r := strings.NewReplacer("/etc/nats-ca-cert/ca.crt", certs+"/ca.pem",
		"/etc/nats-certs/nats/tls.crt", certs+"/server.pem", "/etc/nats-certs/nats/tls.key", certs+"/server-key.pem",
		"/etc/nats-certs/cluster/tls.crt", certs+"/route.pem", "/etc/nats-certs/cluster/tls.key", certs+"/route-key.pem",
		"/etc/nats-certs/cluster/ca.crt", certs+"/route-ca.pem",
		`"/data"`, `"`+dir+`/js"`, "/var/run/nats/nats.pid", dir+"/nats.pid")
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.WriteFile(filepath.Join(dir, "nats.conf"), []byte(r.Replace(natsConf)), 0o644))
	must(os.WriteFile(filepath.Join(dir, "accounts.conf"), []byte(accounts), 0o644))
	cmd := exec.Command(natsBin, "-c", filepath.Join(dir, "nats.conf"), "-t")
	cmd.Env = append(os.Environ(), "SERVER_NAME=nats-0")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("nats-server -t on the rendered configuration: %v\n%s", err, b)
	}
}

// literal returns the block scalar under key (a line of its own) in
// rendered YAML, without its indentation (two more spaces than the key's).
func literal(doc, key string) string {
	_, rest, ok := strings.Cut(doc, key+"\n")
	if !ok {
		return ""
	}
	indent := strings.Repeat(" ", len(key)-len(strings.TrimLeft(key, " "))+2)
	var b strings.Builder
	for _, line := range strings.SplitAfter(rest, "\n") {
		if strings.TrimSpace(line) == "" {
			b.WriteString("\n")
			continue
		}
		l, ok := strings.CutPrefix(line, indent)
		if !ok {
			break
		}
		b.WriteString(l)
	}
	return b.String()
}

// checkContains reports each of wants that text, the what, lacks.
func checkContains(t *testing.T, what, text string, wants ...string) {
	t.Helper()
	for _, want := range wants {
		if !strings.Contains(text, want) {
			t.Errorf("%s lacks:\n%s", what, want)
		}
	}
}
