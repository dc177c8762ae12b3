package test

import (
	"bytes"
	"encoding/json"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// modulePath is carddrift's module path; the layer table names packages
// relative to it.
const modulePath = "github.com/carddrift/carddrift"

// layoutLayer is one level of the package tree: its packages may import
// packages of lower layers only (arrows point down), never of their own
// layer or of one above.
type layoutLayer struct {
	name string
	pkgs []string // relative to the module, exact
}

// layoutLayers is carddrift's layout, bottom up. A package that is not in it
// fails TestLayout: add it to the layer that says what it is. The layering
// is checked on non-test imports; a package's tests may import rigs and
// packages above it (the store's tests run on store/memstore).
var layoutLayers = []layoutLayer{
	// Leaves: packages that import no carddrift package. Canonical JSON
	// and the strict JSON scanner, the stream topology, the internal helpers
	// of one sub-tree (Go's internal rule keeps them to it), the inspection pages' shared style and
	// formats, and the test harnesses that stand on nothing of carddrift
	// (an embedded JetStream, the page checks).
	{"leaves", []string{
		"detector/jcs",
		"events/internal/defaults", "events/internal/retained", "events/internal/wait",
		"store/internal/kvkey", "store/topology",
		"events/inspect/render", "events/inspect/render/rendertest", "store/natstest",
		"events/client/a2aemitv2/a2aemitv2test",
	}},
	// The JSON Schemas of the contract, compiled and read over the strict
	// JSON scanner (detector/jcs).
	{"schemas", []string{"schemas"}},
	// Card signatures (JWS over the canonical card), and the JCS test
	// vectors' rig.
	{"signature", []string{"detector/signature", "detector/jcs/jcstest"}},
	// The pure tree's judgement: card model and parser, rules, diff,
	// verdict, split-brain policy; and the signing rig for tests.
	{"detector", []string{"detector", "detector/signature/signaturetest"}},
	// The store of pins, cards and leases, and the provisioner of every
	// stream and bucket (the topology's placement): it stands on the pure
	// tree and the topology, below the contract.
	{"store", []string{"store"}},
	// The event contract: types, codec and subjects; the stores' second
	// implementation.
	{"contract, stores", []string{"events", "store/memstore"}},
	// Publishing the contract's events onto JetStream (events/publish, the
	// contract's emitter and publisher).
	{"publish", []string{"events/publish"}},
	// Client-side of the contract (events/client); the live-card source.
	{"client contract, fetcher", []string{"events/client", "store/fetcher"}},
	// The task core (one decision per event, no I/O) and the worker's
	// fetch budget.
	{"client lifecycle tracking and its test rig", []string{"events/client/internal/track", "events/client/clienttest"}},
	{"task core", []string{"events/task", "events/worker/budget"}},
	// The one observation of the card a task is judged against, and its
	// conversion into the task core's, shared by the shells that judge
	// live cards (the worker, the planner's Checker).
	{"observation", []string{"events/internal/observation"}},
	// What runs a task core or reads its records: the worker runtime,
	// client libraries, inspection (replay, census, impact).
	{"runtime, clients, inspection", []string{
		"events/worker",
		"events/client/a2aemit", "events/client/a2aemitv2", "events/client/planner",
		"events/inspect/census", "events/inspect/impact", "events/inspect/replay",
	}},
	// The service: workers, their consumers and the HTTP surface.
	{"service", []string{"events/service"}},
	// The fleet simulator, and the service's test rig.
	{"simulator", []string{"events/fleet", "events/service/servicetest"}},
	// The commands.
	{"commands", []string{"cmd/carddrift", "cmd/carddrift-planner"}},
	// What the measuring tools under test/ share.
	{"measuring tools' parts", []string{"test/internal/rig"}},
	// Packages of tests only: deployment files, end-to-end and interop; and
	// the measuring tools (test/iofloor: the floor of serve's round trips;
	// test/soak: serve over hours).
	{"tests", []string{"deployments", "test", "test/iofloor", "test/soak"}},
}

// plannedPkgs are table entries for packages not written yet: they may be
// missing. Drop an entry once its package exists.
var plannedPkgs = []string{}

// harnesses are test rigs not named for what they test: store/natstest
// starts the embedded JetStream servers every package's tests run on. Like
// the rigs, no non-test file imports them.
var harnesses = []string{"store/natstest"}

// pureNet are the standard library's packages under net/ that parse and
// do no I/O: the detector may import them (DESIGN: net/url, net/netip).
var pureNet = []string{"net/url", "net/netip"}

// forbiddenInDetector are what no package under detector/ may reach, by any
// path of imports: networking (but pureNet), NATS, carddrift's store.
func forbiddenInDetector(p string) bool {
	if slices.Contains(pureNet, p) {
		return false
	}
	return p == "net" || strings.HasPrefix(p, "net/") ||
		strings.HasPrefix(p, "github.com/nats-io/") ||
		p == modulePath+"/store" || strings.HasPrefix(p, modulePath+"/store/")
}

// sealedDeps are dependencies of the pure tree whose own imports
// forbiddenInDetector does not follow: go-jose (JWS and JWK parsing for
// detector/signature) imports net/url for a JWK's "x5u" field and
// crypto/x509, which imports net for IP addresses in certificates. Neither
// does I/O for detector/signature (it parses keys and verifies
// signatures); a path to net/* that does not pass through one of these
// still fails. NATS and store are forbidden through them too.
var sealedDeps = []string{"github.com/go-jose/go-jose/v4", "crypto/x509"}

// contractIdents are what the contract's files may use of nats.go and its
// jetstream package: message and header types for the codec, and the
// configuration types and constants of the stream topology — no client
// behaviour (connections, publishing, consuming).
var contractIdents = regexp.MustCompile(`^(Msg|Header|MsgIDHeader|[A-Z]\w*(Config|Policy|Storage|Compression)|Discard(Old|New))$`)

// pendingContractFiles are files of package events that are still to move
// out of the contract (none: the emitter went to events/client, the
// publisher to events/publish). Remove an entry when its file is gone.
var pendingContractFiles = []string{}

// listedPkg is what TestLayout reads of `go list -json`.
type listedPkg struct {
	ImportPath   string
	Dir          string
	GoFiles      []string
	Imports      []string
	TestImports  []string
	XTestImports []string
	DepOnly      bool
}

// listPackages runs `go list -deps -json` over the module: its packages and
// every package they depend on (for the import graph).
func listPackages(t *testing.T) map[string]*listedPkg {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("the go command is not on PATH")
	}
	cmd := exec.Command(goBin, "list", "-deps", "-json=ImportPath,Dir,GoFiles,Imports,TestImports,XTestImports,DepOnly", "./...")
	cmd.Dir = ".."
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.Bytes())
	}
	pkgs := map[string]*listedPkg{}
	for dec := json.NewDecoder(bytes.NewReader(out)); ; {
		var p listedPkg
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("go list output: %v", err)
		}
		pkgs[p.ImportPath] = &p
	}
	return pkgs
}

// modRel returns p relative to the module, and whether it is the module's.
func modRel(p string) (string, bool) {
	if p == modulePath {
		return "", true
	}
	r, ok := strings.CutPrefix(p, modulePath+"/")
	return r, ok
}

// isRig reports whether a package is a test rig: a package nested under what
// it tests and named for it with "test" appended (store/natstest,
// events/service/servicetest), imported by tests.
func isRig(r string) bool {
	if slices.Contains(harnesses, r) {
		return true
	}
	dir, base := filepath.Split(r)
	return base == filepath.Base(filepath.Clean(dir))+"test"
}

// TestLayout fails when an import arrow points up the layer table, when a
// package is not in the table, when a package under detector/ reaches
// net/*, NATS or the store (or its tests reach NATS or the store), when
// anything imports cmd/ or test/ or (outside tests and rigs) a test rig,
// and when the contract (package events) uses NATS client behaviour.
func TestLayout(t *testing.T) {
	pkgs := listPackages(t)
	level := map[string]int{}
	for i, l := range layoutLayers {
		if l.name == "" || len(l.pkgs) == 0 {
			t.Errorf("layer table: layer %d needs a name and a package", i)
		}
		for _, p := range l.pkgs {
			if _, dup := level[p]; dup {
				t.Errorf("layer table: %s is in two layers", p)
			}
			level[p] = i
		}
	}
	for p := range level {
		if _, ok := pkgs[modulePath+"/"+p]; !ok && !slices.Contains(plannedPkgs, p) {
			t.Errorf("layer table: %s is not a package of the module (remove it, or add it to plannedPkgs)", p)
		}
	}
	var own []*listedPkg
	for path, p := range pkgs {
		if r, ok := modRel(path); ok && !p.DepOnly {
			own = append(own, p)
			if _, ok := level[r]; !ok {
				t.Errorf("%s is not in the layer table: add it to the layer that says what it is (test/layout_test.go)", r)
			}
		}
	}
	slices.SortFunc(own, func(a, b *listedPkg) int { return strings.Compare(a.ImportPath, b.ImportPath) })

	for _, p := range own {
		r, _ := modRel(p.ImportPath)
		li, known := level[r]
		for _, imp := range p.Imports {
			ir, mine := modRel(imp)
			if !mine {
				continue
			}
			if isRig(ir) && !isRig(r) {
				t.Errorf("%s imports the test rig %s outside its tests: rigs are for tests", r, ir)
			}
			lj, ok := level[ir]
			if known && ok && lj >= li {
				t.Errorf("%s (layer %d, %s) imports %s (layer %d, %s): an arrow points up or sideways; import only lower layers",
					r, li, layoutLayers[li].name, ir, lj, layoutLayers[lj].name)
			}
		}
		for _, imp := range slices.Concat(p.Imports, p.TestImports, p.XTestImports) {
			ir, mine := modRel(imp)
			if !mine {
				continue
			}
			for _, top := range []string{"cmd", "test"} {
				under := func(x string) bool { return x == top || strings.HasPrefix(x, top+"/") }
				if !under(ir) || under(r) {
					continue
				}
				t.Errorf("%s imports %s: nothing imports %s/", r, ir, top)
			}
		}
		if r == "detector" || strings.HasPrefix(r, "detector/") {
			for _, path := range reachForbidden(pkgs, p.ImportPath) {
				t.Errorf("%s reaches %s (%s): the pure tree imports no network, NATS or store", r, path[len(path)-1], strings.Join(path, " → "))
			}
			// Its tests run without a server too: no networking, NATS or
			// store, by any path.
			for _, imp := range slices.Concat(p.TestImports, p.XTestImports) {
				if forbiddenInDetector(imp) {
					t.Errorf("%s's tests import %s: the pure tree's tests need no network, NATS or store", r, imp)
					continue
				}
				for _, path := range reachForbidden(pkgs, imp) {
					t.Errorf("%s's tests reach %s (%s): the pure tree's tests need no network, NATS or store", r, path[len(path)-1], strings.Join(path, " → "))
				}
			}
		}
	}
	checkContract(t, pkgs[modulePath+"/events"])
}

// reachForbidden returns, for each forbidden package that from reaches by
// imports, one shortest path to it (from first). It does not follow sealed
// packages' imports to net/*, but does to NATS and the store.
func reachForbidden(pkgs map[string]*listedPkg, from string) [][]string {
	type node struct {
		path      string
		viaSealed bool // some package on the path is sealed
		parent    *node
	}
	type visit struct {
		path      string
		viaSealed bool
	}
	seen := map[visit]bool{}
	reported := map[string]bool{}
	var found [][]string
	for queue := []*node{{path: from}}; len(queue) > 0; {
		n := queue[0]
		queue = queue[1:]
		if seen[visit{n.path, n.viaSealed}] {
			continue
		}
		seen[visit{n.path, n.viaSealed}] = true
		if n.path != from && forbiddenInDetector(n.path) {
			isNet := n.path == "net" || strings.HasPrefix(n.path, "net/")
			if !reported[n.path] && !(isNet && n.viaSealed) {
				reported[n.path] = true
				var trail []string
				for m := n; m != nil; m = m.parent {
					r, ok := modRel(m.path)
					if !ok {
						r = m.path
					}
					trail = append([]string{r}, trail...)
				}
				found = append(found, trail)
			}
			continue // the first forbidden package on a path is the finding
		}
		p := pkgs[n.path]
		if p == nil {
			continue
		}
		via := n.viaSealed || slices.ContainsFunc(sealedDeps, func(s string) bool { return n.path == s || strings.HasPrefix(n.path, s+"/") })
		for _, imp := range p.Imports {
			queue = append(queue, &node{path: imp, viaSealed: via, parent: n})
		}
	}
	return found
}

// checkContract fails when a file of package events (other than those
// pendingContractFiles lists) uses anything of nats.go or jetstream but
// message, header and configuration types: the contract says what goes on
// the wire and how streams are laid out, it does not connect, publish or
// consume.
func checkContract(t *testing.T, p *listedPkg) {
	t.Helper()
	if p == nil {
		t.Fatalf("package events is missing")
	}
	for _, f := range pendingContractFiles {
		if !slices.Contains(p.GoFiles, f) {
			t.Errorf("events/%s is gone: remove it from pendingContractFiles", f)
		}
	}
	fset := token.NewFileSet()
	for _, name := range p.GoFiles {
		if slices.Contains(pendingContractFiles, name) {
			continue
		}
		file, err := parser.ParseFile(fset, filepath.Join(p.Dir, name), nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatalf("parse events/%s: %v", name, err)
		}
		local := map[string]string{} // import name → path, for nats.go and jetstream
		for _, is := range file.Imports {
			path, _ := strconv.Unquote(is.Path.Value)
			if !strings.HasPrefix(path, "github.com/nats-io/") {
				continue
			}
			if path != "github.com/nats-io/nats.go" && path != "github.com/nats-io/nats.go/jetstream" {
				t.Errorf("events/%s imports %s: the contract uses only nats.go's and jetstream's types", name, path)
				continue
			}
			n := filepath.Base(path)
			if path == "github.com/nats-io/nats.go" {
				n = "nats"
			}
			if is.Name != nil {
				n = is.Name.Name
			}
			local[n] = path
		}
		ast.Inspect(file, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			id, ok := sel.X.(*ast.Ident)
			if !ok {
				return true
			}
			if path, ok := local[id.Name]; ok && !contractIdents.MatchString(sel.Sel.Name) {
				t.Errorf("%s: the contract uses %s.%s (%s): client behaviour belongs above the contract (events/publish, events/client)",
					fset.Position(sel.Pos()), id.Name, sel.Sel.Name, path)
			}
			return true
		})
	}
}

// TestPackageDocs fails when a package of the module has no doc.go, or one
// without a package comment: every package says what it is for in one place.
func TestPackageDocs(t *testing.T) {
	for path, p := range listPackages(t) {
		r, mine := modRel(path)
		if !mine || p.DepOnly {
			continue
		}
		file, err := parser.ParseFile(token.NewFileSet(), filepath.Join(p.Dir, "doc.go"), nil, parser.PackageClauseOnly|parser.ParseComments)
		if err != nil {
			t.Errorf("%s: no doc.go (%v): say what the package is for in its doc.go", r, err)
			continue
		}
		if file.Doc == nil || len(strings.TrimSpace(file.Doc.Text())) == 0 {
			t.Errorf("%s/doc.go has no package comment", r)
		}
	}
}
