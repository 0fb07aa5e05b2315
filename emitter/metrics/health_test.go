package metrics_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/evspool/evspool/emitter/metrics"
)

func get(t *testing.T, h http.Handler) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
	body, err := io.ReadAll(rec.Result().Body)
	require.NoError(t, err)
	return rec.Code, string(body)
}

func TestProbeHandlers(t *testing.T) {
	em, _ := open(t, true) // the receiver is down: still alive and ready
	live, ready := metrics.LiveHandler(em), metrics.ReadyHandler(em)
	code, body := get(t, live)
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, "ok\n", body)
	code, _ = get(t, ready)
	require.Equal(t, http.StatusOK, code)

	require.NoError(t, em.Close(context.Background()))
	code, body = get(t, live)
	require.Equal(t, http.StatusServiceUnavailable, code)
	require.Contains(t, body, "drainer has stopped")
	code, body = get(t, ready)
	require.Equal(t, http.StatusServiceUnavailable, code)
	require.Contains(t, body, "closed")
}
