package emitter

import (
	"go/ast"
	"go/parser"
	"go/token"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/evspool/evspool/wal"
)

// docValue parses a figure as the doc comments write it: "5 s", "100 ms",
// "64 MiB", "256 KiB", "1000", "false". ok is false for anything else
// (wal.DropOldest, "none", os.Stdout).
func docValue(s string) (v any, ok bool) {
	s = strings.TrimSpace(s)
	if s == "false" || s == "true" {
		return s == "true", true
	}
	m := regexp.MustCompile(`^(\d+)(?: (s|ms|MiB|KiB))?$`).FindStringSubmatch(s)
	if m == nil {
		return nil, false
	}
	n, _ := strconv.ParseInt(m[1], 10, 64)
	switch m[2] {
	case "s":
		return time.Duration(n) * time.Second, true
	case "ms":
		return time.Duration(n) * time.Millisecond, true
	case "MiB":
		return n << 20, true
	case "KiB":
		return n << 10, true
	}
	return n, true
}

// defaultsSeen is Options after withDefaults, with the defaults the spool
// fills in itself (MaxSpoolBytes: wal.Options.MaxBytes).
func defaultsSeen(t *testing.T) reflect.Value {
	t.Helper()
	o, err := (*Options)(nil).withDefaults()
	require.NoError(t, err)
	if o.MaxSpoolBytes == 0 {
		o.MaxSpoolBytes = wal.DefaultMaxBytes
	}
	return reflect.ValueOf(o)
}

// sameValue compares a field's value with a figure from its doc comment.
func sameValue(field reflect.Value, doc any) bool {
	switch d := doc.(type) {
	case bool:
		return field.Kind() == reflect.Bool && field.Bool() == d
	case time.Duration:
		return field.Type() == reflect.TypeOf(time.Duration(0)) && time.Duration(field.Int()) == d
	case int64:
		return field.CanInt() && field.Int() == d
	}
	return false
}

// Each Options field's doc comment states its default ("Default 5 s.",
// "Defaults 10 ms and 100 ms.", "Default X (16 MiB)"), and that figure is
// the one the code applies; so are the "Options.X (figure)" the package
// docs of emitter and wal give. go doc readers and docs/ (whose flag
// defaults cmd/evspool checks against these) then read one number.
func TestDocCommentDefaults(t *testing.T) {
	t.Parallel()
	seen := defaultsSeen(t)
	f, err := parser.ParseFile(token.NewFileSet(), "options.go", nil, parser.ParseComments)
	require.NoError(t, err)
	var fields *ast.FieldList
	ast.Inspect(f, func(n ast.Node) bool {
		if ts, ok := n.(*ast.TypeSpec); ok && ts.Name.Name == "Options" {
			fields = ts.Type.(*ast.StructType).Fields
		}
		return fields == nil
	})
	require.NotNil(t, fields)

	defaultPhrase := regexp.MustCompile(`Defaults? ([^.:;]+(?:\.\d+[^.:;]*)?)`)
	paren := regexp.MustCompile(`\(([^)]+)\)`)
	// A comment covers its field and the fields after it that have none.
	type commented struct {
		doc   string
		names []string
	}
	var groups []commented
	for _, fl := range fields.List {
		var names []string
		for _, n := range fl.Names {
			names = append(names, n.Name)
		}
		if fl.Doc != nil || len(groups) == 0 {
			groups = append(groups, commented{doc: fl.Doc.Text()})
		}
		g := &groups[len(groups)-1]
		g.names = append(g.names, names...)
	}
	checked := 0
	for _, g := range groups {
		m := defaultPhrase.FindStringSubmatch(strings.Join(strings.Fields(g.doc), " "))
		if m == nil {
			continue
		}
		phrase := m[1]
		if p := paren.FindStringSubmatch(phrase); p != nil {
			phrase = p[1] // "a name (16 MiB)"
		}
		phrase, _, _ = strings.Cut(phrase, ",")
		values := strings.Split(phrase, " and ")
		if len(values) > len(g.names) {
			continue
		}
		names := g.names[len(g.names)-len(values):] // "Default 2 s" of ReplayWindow and ReplayLinger is the last's
		for i, v := range values {
			dv, ok := docValue(v)
			if !ok {
				continue
			}
			checked++
			assert.True(t, sameValue(seen.FieldByName(names[i]), dv), "Options.%s: the doc comment says the default is %q, the code gives %v", names[i], v, seen.FieldByName(names[i]).Interface())
		}
	}
	require.GreaterOrEqual(t, checked, 12, "defaults found in the doc comments")

	inPackageDoc := regexp.MustCompile(`Options\.(\w+) \((\d+(?: [a-zA-Z]+)?)\)`)
	for _, file := range []string{"doc.go", "../wal/doc.go"} {
		src, err := readSource(file)
		require.NoError(t, err)
		for _, m := range inPackageDoc.FindAllStringSubmatch(src, -1) {
			dv, ok := docValue(m[2])
			if !ok {
				continue
			}
			field := seen.FieldByName(m[1])
			if assert.True(t, field.IsValid(), "%s: Options.%s", file, m[1]) {
				assert.True(t, sameValue(field, dv), "%s says Options.%s is %s by default; the code gives %v", file, m[1], m[2], field.Interface())
			}
		}
	}
}

func readSource(file string) (string, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, file, nil, parser.ParseComments)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for _, cg := range f.Comments {
		b.WriteString(strings.Join(strings.Fields(cg.Text()), " "))
		b.WriteString("\n")
	}
	return b.String(), nil
}

func TestDocValue(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]any{"5 s": 5 * time.Second, "100 ms": 100 * time.Millisecond, "64 MiB": int64(64 << 20),
		"256 KiB": int64(256 << 10), "1000": int64(1000), "false": false} {
		got, ok := docValue(in)
		require.True(t, ok, in)
		require.Equal(t, want, got, in)
	}
	for _, in := range []string{"wal.DropOldest", "none", "os.Stdout", "a net.Dialer with DialTimeout"} {
		_, ok := docValue(in)
		require.False(t, ok, in)
	}
	seen := defaultsSeen(t)
	require.False(t, sameValue(seen.FieldByName("WriteTimeout"), 4*time.Second), "a wrong figure is caught")
	require.True(t, sameValue(seen.FieldByName("WriteTimeout"), 5*time.Second))
}
