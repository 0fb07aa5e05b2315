package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSummary(t *testing.T) {
	t.Parallel()
	in := strings.Join([]string{
		`{"Action":"run","Package":"p","Test":"TestA"}`,
		`{"Action":"output","Package":"p","Test":"TestA","Output":"quiet\n"}`,
		`{"Action":"pass","Package":"p","Test":"TestA","Elapsed":3.5}`,
		`{"Action":"output","Package":"p","Test":"TestB","Output":"    b_test.go:9: boom\n"}`,
		`{"Action":"fail","Package":"p","Test":"TestB","Elapsed":1}`,
		`{"Action":"pass","Package":"p","Test":"TestB/sub","Elapsed":9}`,
		`{"Action":"output","Package":"p","Output":"FAIL\tp\t4.6s\n"}`,
		`{"Action":"fail","Package":"p","Elapsed":4.6}`,
		`# q [build failed]`,
	}, "\n")
	s := newSummary()
	var out strings.Builder
	require.NoError(t, s.read(strings.NewReader(in), &out))
	s.print(&out, 5)
	got := out.String()
	require.True(t, s.failed)
	require.Contains(t, got, "b_test.go:9: boom", "a failed test's output is shown")
	require.NotContains(t, got, "quiet", "a passing test's output is not")
	require.Contains(t, got, "FAIL\tp\t4.6s")
	require.Contains(t, got, "# q [build failed]", "lines that are not JSON pass through")
	require.Regexp(t, `slowest tests:\n\s+3.5s  p TestA\n$`, got, "subtests and failed tests are not ranked")
	require.Contains(t, got, "4.6s  p\n")
}
