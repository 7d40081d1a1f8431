package externalscaler

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// The server reaches the trigger autoscaler only through the interface it
// declares (Targets): no file of the package imports the autoscaler, so
// the external scaler builds without it.
func TestServerDoesNotImportTheAutoscaler(t *testing.T) {
	const autoscalerPath = "github.com/scaleplane/scaleplane/controllers/autoscaler"
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		parsed, err := parser.ParseFile(fset, f, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		checked++
		for _, imp := range parsed.Imports {
			if p, _ := strconv.Unquote(imp.Path.Value); p == autoscalerPath || strings.HasPrefix(p, autoscalerPath+"/") {
				t.Errorf("%s imports %s: ask it through Targets instead", f, p)
			}
		}
	}
	if checked == 0 {
		t.Fatal("no file of the package was checked")
	}
}
