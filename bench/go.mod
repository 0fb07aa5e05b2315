module github.com/evspool/evspool/bench

go 1.26.8

replace github.com/evspool/evspool => ../

require (
	github.com/cenkalti/backoff/v4 v4.3.0
	github.com/evspool/evspool v0.0.0-00010101000000-000000000000
	github.com/joncrlsn/dque v0.0.0-20211108142734-c2ef48c5192a
	github.com/tidwall/wal v1.2.1
	go.etcd.io/bbolt v1.4.3
	golang.org/x/term v0.37.0
	gonum.org/v1/plot v0.17.0
)

require (
	codeberg.org/go-fonts/liberation v0.5.0 // indirect
	codeberg.org/go-latex/latex v0.2.0 // indirect
	codeberg.org/go-pdf/fpdf v0.11.1 // indirect
	git.sr.ht/~sbinet/gg v0.7.0 // indirect
	github.com/ajstarks/svgo v0.0.0-20211024235047-1546f124cd8b // indirect
	github.com/gofrs/flock v0.7.1 // indirect
	github.com/golang/freetype v0.0.0-20170609003504-e2365dfdc4a0 // indirect
	github.com/pkg/errors v0.9.1 // indirect
	github.com/tidwall/gjson v1.10.2 // indirect
	github.com/tidwall/match v1.1.1 // indirect
	github.com/tidwall/pretty v1.2.0 // indirect
	github.com/tidwall/tinylru v1.1.0 // indirect
	golang.org/x/image v0.30.0 // indirect
	golang.org/x/sys v0.38.0 // indirect
	golang.org/x/text v0.28.0 // indirect
)
