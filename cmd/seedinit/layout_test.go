package main

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/seedinit/seedinit/apply"
	"github.com/seedinit/seedinit/seed/ds"
)

// docs/layout.md is how a newcomer finds the module of a cloud-config key
// and the file of a cloud's datasource: every module and datasource this
// binary registers has its row there, exactly as it is registered.
func TestLayoutNamesEveryModuleAndDatasource(t *testing.T) {
	doc, err := os.ReadFile("../../docs/layout.md")
	if err != nil {
		t.Fatal(err)
	}
	const module = "github.com/seedinit/seedinit/"
	for _, name := range apply.Registered() {
		m, _ := apply.Lookup(name)
		fn := runtime.FuncForPC(reflect.ValueOf(m.Run).Pointer()).Name()
		pkg, _, _ := strings.Cut(strings.TrimPrefix(fn, module), ".")
		if pkg == "cmd/seedinit" { // this package's tests register their own
			continue
		}
		var keys []string
		for _, k := range m.Keys {
			keys = append(keys, "`"+k+"`")
		}
		cell := strings.Join(keys, ", ")
		if cell == "" {
			cell = "(none: from the seed itself)"
		}
		if row := fmt.Sprintf("| %s | %s | `%s` |", name, cell, pkg); !strings.Contains(string(doc), row+"\n") {
			t.Errorf("docs/layout.md lacks the module's row, as registered:\n%s", row)
		}
	}
	for _, d := range ds.All() {
		file := datasourceFile(t, d.Name())
		if row := fmt.Sprintf("| %s | `%s` |", d.Name(), file); !strings.Contains(string(doc), row+"\n") {
			t.Errorf("docs/layout.md lacks the datasource's row:\n%s", row)
		}
	}
}

// datasourceFile is the file of seed/ds whose Name method returns name.
func datasourceFile(t *testing.T, name string) string {
	t.Helper()
	files, err := filepath.Glob("../../seed/ds/*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), ") Name() string") && strings.Contains(string(b), "{ return \""+name+"\" }") {
			return "seed/ds/" + filepath.Base(f)
		}
	}
	t.Fatalf("no file of seed/ds names the datasource %s", name)
	return ""
}
