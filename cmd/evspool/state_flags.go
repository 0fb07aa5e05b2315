package main

import (
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/evspool/evspool/emitter"
	"github.com/evspool/evspool/wal"
)

// stateFlags are --state-key, --state-request, --state-clear and what
// bounds them (promise 12, docs/operations.md "State keys"), and
// --release-idle.
type stateFlags struct {
	key, request, clear string
	maxKeys             int
	maxAge              time.Duration
	releaseIdle         time.Duration
}

func (s *stateFlags) register(fs *flag.FlagSet) {
	s.maxKeys = wal.DefaultMaxStateKeys
	fs.StringVar(&s.key, "state-key", "",
		"FIELD[,FIELD...]: keep the newest event of every key (the values of these top-level JSON fields; a missing one counts as empty, "+
			"a line that is not a JSON object or has none of them has no key) and start every connection with the newest event of each key "+
			"that has nothing pending, then the backlog; for receivers that treat a line as a value, never one that counts lines "+
			"(cloud-event-proxy v2: type,profile,iface; default off)")
	fs.StringVar(&s.request, "state-request", "",
		"TYPE: a line the receiver writes whose JSON \"type\" is TYPE asks for the state, answered at the next write boundary "+
			"(v2: status_request; needs --state-key)")
	fs.StringVar(&s.clear, "state-clear", "",
		"TYPE: an event whose JSON \"type\" is TYPE retires every key before it, delivered in its place (v2: cache_clear; needs --state-key)")
	fs.IntVar(&s.maxKeys, "state-max-keys", s.maxKeys, "the most keys the state keeps; a new key past it is not kept, counted and logged")
	fs.Var(durationFlag{&s.maxAge}, "state-max-age", "leave out of the state a key no event renewed for this long (default: none left out)")
	fs.Var(durationFlag{&s.releaseIdle}, "release-idle",
		"close the connection once it had nothing to carry this long, and dial again when there is: "+
			"for a receiver that serves one connection at a time (cloud-event-proxy v2) (default: keep it)")
}

// fields returns --state-key's fields.
func (s *stateFlags) fields() []string {
	if s.key == "" {
		return nil
	}
	return strings.Split(s.key, ",")
}

func (s *stateFlags) validate() error {
	for _, f := range s.fields() {
		if strings.TrimSpace(f) == "" || strings.TrimSpace(f) != f {
			return fmt.Errorf("--state-key %q: give field names separated by commas, without spaces, e.g. type,profile,iface", s.key)
		}
	}
	switch {
	case s.key == "" && (s.request != "" || s.clear != "" || s.maxAge != 0):
		return fmt.Errorf("--state-request, --state-clear and --state-max-age need --state-key: name the fields that make an event's key, e.g. --state-key type,profile,iface")
	case s.maxKeys < 1:
		return fmt.Errorf("--state-max-keys %d: give a count of 1 or more", s.maxKeys)
	case s.maxAge < 0 || s.releaseIdle < 0:
		return fmt.Errorf("--state-max-age and --release-idle must be positive durations")
	}
	return nil
}

// apply sets the emitter's options for the flags.
func (s *stateFlags) apply(o *emitter.Options) {
	o.ReleaseIdle = s.releaseIdle
	if s.key == "" {
		return
	}
	o.StateKey = emitter.JSONStateKey(s.fields(), s.clear)
	if s.request != "" {
		o.StateRequest = emitter.JSONType(s.request)
	}
	o.MaxStateKeys, o.StateMaxAge = s.maxKeys, s.maxAge
}
