// Package layout checks the shape of the source tree that docs/architecture.md promises:
// small files, short functions and imports that only point down the layers. It reads the
// code as text and syntax; it builds and runs nothing.
package layout

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const (
	module = "github.com/berthhq/berth"
	// maxFileLines and maxFuncLines are the limits docs/architecture.md states for
	// non-test code: past them a file holds more than one concept, a function more than
	// one step.
	maxFileLines = 400
	maxFuncLines = 80
)

// sourceFile is one parsed non-test Go file of the repository.
type sourceFile struct {
	path  string // relative to the repository root
	pkg   string // import path of its package
	lines int
	file  *ast.File
}

// repoRoot is two levels up from this package.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("repository root not found at %s: %v", root, err)
	}
	return root
}

// sources parses every non-test, non-generated Go file under the repository root.
func sources(t *testing.T) ([]sourceFile, *token.FileSet) {
	t.Helper()
	root := repoRoot(t)
	fset := token.NewFileSet()
	var out []sourceFile
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "vendor" ||
				name == "bin" || name == "build") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
		if err != nil {
			return fmt.Errorf("parse %s: %w", path, err)
		}
		if ast.IsGenerated(f) {
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		out = append(out, sourceFile{
			path:  rel,
			pkg:   module + "/" + filepath.ToSlash(filepath.Dir(rel)),
			lines: fset.File(f.Pos()).LineCount(),
			file:  f,
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) == 0 {
		t.Fatal("no Go files found")
	}
	return out, fset
}

func TestFilesAndFunctionsAreSmall(t *testing.T) {
	files, fset := sources(t)
	for _, f := range files {
		if f.lines > maxFileLines {
			t.Errorf("%s: %d lines, more than %d: split it by concept", f.path, f.lines, maxFileLines)
		}
		for _, d := range f.file.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			n := fset.Position(fn.End()).Line - fset.Position(fn.Pos()).Line + 1
			if n > maxFuncLines {
				t.Errorf("%s: func %s is %d lines, more than %d: split it into named steps",
					f.path, fn.Name.Name, n, maxFuncLines)
			}
		}
	}
}

// layerRule forbids packages under from to import packages under any of to.
type layerRule struct {
	from string
	to   []string
	why  string
}

var layerRules = []layerRule{
	{"api/", []string{"internal/", "cmd/"}, "wire types are public and depend on nothing of berth"},
	{"internal/store/", []string{"internal/server", "internal/controller", "internal/scheduler", "internal/agent", "internal/cli"},
		"the store is the bottom of the control plane"},
	{"internal/scheduler/", []string{"internal/server", "internal/controller", "internal/agent", "internal/cli"},
		"the scheduler is handed what it reads"},
	{"internal/controller/", []string{"internal/server", "internal/agent", "internal/cli"},
		"controllers are started by the process, not by the API"},
	{"internal/executor/", []string{"internal/agent", "internal/server", "internal/cli"},
		"the agent hands the executor what it needs; nothing below the agent calls back up"},
	{"internal/driver/", []string{"internal/agent", "internal/executor", "internal/server", "internal/cli"},
		"drivers are the bottom of the node side"},
	{"internal/devices/", []string{"internal/agent", "internal/executor", "internal/server", "internal/cli"},
		"device managers are handed to the executor by the agent"},
	{"internal/client/", []string{"internal/server", "internal/store", "internal/driver", "internal/agent"},
		"the client speaks the wire types of api/ only"},
	{"internal/cli/", []string{"internal/controller", "internal/store", "internal/scheduler"},
		"the command line fills internal/daemon's configs; the daemon assembles the processes"},
	{"internal/server/", []string{"internal/daemon", "internal/cli"},
		"the API serves what it is handed"},
	{"internal/agentapi/", []string{"internal/server", "internal/daemon", "internal/cli"},
		"the agent protocol sits beside the user API, beneath the process that mounts both"},
	{"internal/httpapi/", []string{"internal/server", "internal/agentapi", "internal/daemon", "internal/cli"},
		"the HTTP plumbing is beneath both APIs"},
}

func TestImportsPointDown(t *testing.T) {
	files, _ := sources(t)
	for _, f := range files {
		rel := strings.TrimPrefix(f.pkg, module+"/") + "/"
		for _, rule := range layerRules {
			if !strings.HasPrefix(rel, rule.from) {
				continue
			}
			for _, imp := range f.file.Imports {
				path, _ := strconv.Unquote(imp.Path.Value)
				if !strings.HasPrefix(path, module+"/") {
					continue
				}
				target := strings.TrimPrefix(path, module+"/")
				if slices.ContainsFunc(rule.to, func(p string) bool { return target == p || strings.HasPrefix(target, strings.TrimSuffix(p, "/")+"/") }) {
					t.Errorf("%s imports %s: %s", f.path, target, rule.why)
				}
			}
		}
	}
}
