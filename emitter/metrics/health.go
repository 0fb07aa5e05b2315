package metrics

import (
	"net/http"

	"github.com/evspool/evspool/emitter"
)

// LiveHandler answers a liveness probe (/healthz) from emitter.Emitter.Alive:
// 200 "ok", else 503 and the reason. A receiver outage is not a failure:
// restarting evspool would not bring the receiver back.
func LiveHandler(em *emitter.Emitter) http.Handler {
	return probe(em.Alive)
}

// ReadyHandler answers a readiness probe (/readyz) from
// emitter.Emitter.Ready: 200 "ok", else 503 and the reason.
func ReadyHandler(em *emitter.Emitter) http.Handler {
	return probe(em.Ready)
}

func probe(check func() error) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		if err := check(); err != nil {
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte(err.Error() + "\n"))
			return
		}
		_, _ = w.Write([]byte("ok\n"))
	})
}
