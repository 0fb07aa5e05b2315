package emitter_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/evspool/evspool/emitter"
	"github.com/evspool/evspool/wal"
)

// Open refuses a value no field means (a negative count, size or duration
// where the field gives none a meaning, bounds that contradict) with an
// error that names the field, says what is wrong and what to give instead,
// rather than clamping it or taking the default.
func TestOpenRefusesOptions(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		opts emitter.Options
		want []string // each in the error; nil: Open succeeds
	}{
		"zero":                                       {emitter.Options{}, nil},
		"negative ReplayWindow: no window":           {emitter.Options{ReplayWindow: -1}, nil},
		"negative MaxAttempts: never":                {emitter.Options{MaxAttempts: -1}, nil},
		"StallTimeout = WriteTimeout":                {emitter.Options{WriteTimeout: time.Second, StallTimeout: time.Second}, nil},
		"WriteTimeout past the default StallTimeout": {emitter.Options{WriteTimeout: time.Minute}, nil},
		"MinBackoff = MaxBackoff":                    {emitter.Options{MinBackoff: time.Second, MaxBackoff: time.Second}, nil},
		"MaxBackoff below the default MinBackoff":    {emitter.Options{MaxBackoff: 5 * time.Millisecond}, nil},
		"smallest spool":                             {emitter.Options{MaxSpoolBytes: wal.MinMaxBytes}, nil},

		"network":              {emitter.Options{Network: "udp"}, []string{"network", `"udp"`, "use unix or tcp"}},
		"MaxSpoolBytes < 0":    {emitter.Options{MaxSpoolBytes: -1}, []string{"MaxSpoolBytes -1", "give at least 1048576", "or 0"}},
		"MaxSpoolBytes < 1MiB": {emitter.Options{MaxSpoolBytes: wal.MinMaxBytes - 1}, []string{"MaxSpoolBytes 1048575", "give at least 1048576", "or 0"}},
		"OnFull":               {emitter.Options{OnFull: wal.Block + 1}, []string{"OnFull 3", "use DropOldest, DropNewest or Block"}},
		"MaxEventSize < 0":     {emitter.Options{MaxEventSize: -1}, []string{"MaxEventSize -1", "give at least 2", "or 0"}},
		"MaxEventSize 1":       {emitter.Options{MaxEventSize: 1}, []string{"MaxEventSize 1", "give at least 2", "or 0"}},
		"MaxEventSize over a quarter of the spool": {emitter.Options{MaxEventSize: 256<<10 + 1, MaxSpoolBytes: 1 << 20},
			[]string{"MaxEventSize 262145 is over a quarter of MaxSpoolBytes 1048576", "give at most 262144", "or raise MaxSpoolBytes"}},
		"MaxEventSize over a quarter of the default spool": {emitter.Options{MaxEventSize: 16<<20 + 1},
			[]string{"MaxEventSize 16777217 is over a quarter of MaxSpoolBytes 67108864"}},
		"MaxEventSize a quarter of the spool": {emitter.Options{MaxEventSize: 256 << 10, MaxSpoolBytes: 1 << 20}, nil},
		"DialTimeout":                         {emitter.Options{DialTimeout: -time.Second}, []string{"DialTimeout -1s is negative", "or 0"}},
		"WriteTimeout":                        {emitter.Options{WriteTimeout: -time.Second}, []string{"WriteTimeout -1s is negative", "or 0"}},
		"StallTimeout":                        {emitter.Options{StallTimeout: -time.Second}, []string{"StallTimeout -1s is negative", "or 0"}},
		"StallTimeout < WriteTimeout": {emitter.Options{StallTimeout: time.Second, WriteTimeout: 2 * time.Second},
			[]string{"StallTimeout 1s is below WriteTimeout 2s", "give at least WriteTimeout", "or 0"}},
		"StallTimeout < default WriteTimeout": {emitter.Options{StallTimeout: time.Second},
			[]string{"StallTimeout 1s is below WriteTimeout 5s"}},
		"BatchEvents": {emitter.Options{BatchEvents: -1}, []string{"BatchEvents -1 is negative", "or 0"}},
		"BatchBytes":  {emitter.Options{BatchBytes: -1}, []string{"BatchBytes -1 is negative", "or 0"}},
		"MinBackoff":  {emitter.Options{MinBackoff: -time.Second}, []string{"MinBackoff -1s is negative", "or 0"}},
		"MaxBackoff":  {emitter.Options{MaxBackoff: -time.Second}, []string{"MaxBackoff -1s is negative", "or 0"}},
		"MinBackoff > MaxBackoff": {emitter.Options{MinBackoff: 2 * time.Second, MaxBackoff: time.Second},
			[]string{"MinBackoff 2s is above MaxBackoff 1s", "give MaxBackoff at least MinBackoff"}},
		"MinBackoff > default MaxBackoff": {emitter.Options{MinBackoff: time.Second},
			[]string{"MinBackoff 1s is above MaxBackoff 100ms"}},
		"WarnInterval":       {emitter.Options{WarnInterval: -time.Second}, []string{"WarnInterval -1s is negative", "or 0"}},
		"MaxAge":             {emitter.Options{MaxAge: -time.Second}, []string{"MaxAge -1s is negative", "or 0"}},
		"MaxHold":            {emitter.Options{MaxHold: -time.Second}, []string{"MaxHold -1s is negative", "or 0"}},
		"ReplayLinger":       {emitter.Options{ReplayLinger: -time.Second}, []string{"ReplayLinger -1s is negative", "or 0"}},
		"MaxDeadLetterBytes": {emitter.Options{MaxDeadLetterBytes: -1}, []string{"MaxDeadLetterBytes -1 is negative", "or 0"}},
		"MaxStateKeys":       {emitter.Options{MaxStateKeys: -1}, []string{"MaxStateKeys -1 is negative", "or 0"}},
		"StateMaxAge":        {emitter.Options{StateMaxAge: -time.Second}, []string{"StateMaxAge -1s is negative", "or 0"}},
		"ReleaseIdle":        {emitter.Options{ReleaseIdle: -time.Second}, []string{"ReleaseIdle -1s is negative", "or 0"}},
		"MaxReceiveLine < 0": {emitter.Options{MaxReceiveLine: -1}, []string{"MaxReceiveLine -1", "give at least 2", "or 0"}},
		"MaxReceiveLine 1":   {emitter.Options{MaxReceiveLine: 1}, []string{"MaxReceiveLine 1", "give at least 2", "or 0"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			opts := tc.opts
			opts.NoSync = true
			em, err := emitter.Open(filepath.Join(dir, "events.sock"), filepath.Join(dir, "spool"), &opts)
			if tc.want == nil {
				require.NoError(t, err)
				assert.NoError(t, em.Close(context.Background()))
				return
			}
			require.Error(t, err)
			assert.Nil(t, em)
			assert.Regexp(t, `^(emitter|wal): `, err.Error(), "the package that refused it")
			for _, w := range tc.want {
				assert.ErrorContains(t, err, w)
			}
			assert.NoDirExists(t, filepath.Join(dir, "spool"), "refused before the spool is touched")
		})
	}
}
