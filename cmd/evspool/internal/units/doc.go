// Package units parses and prints the sizes and durations the evspool CLI
// takes as flags, with error messages meant for the person who typed them.
//
// # Sizes
//
// A size is a non-negative number with an optional unit, optionally
// separated by spaces: "1048576", "64MiB", "64 MiB", "1.5GiB", "512KB".
// Units ignore case ("64mib" is 64MiB):
//
//	B                      bytes
//	KiB MiB GiB TiB        1024, 1024², 1024³, 1024⁴ bytes
//	Ki  Mi  Gi  Ti         the same (Kubernetes spelling)
//	K   M   G   T          the same: a bare letter means binary, as in dd,
//	                       ulimit and java -Xmx, because a spool cap is memory
//	                       and disk, which people count in powers of two
//	KB  MB  GB  TB         1000, 1000², 1000³, 1000⁴ bytes
//
// A decimal fraction is allowed ("1.5GiB"); fractions of a byte are dropped
// ("1.1KiB" is 1126 bytes), but a plain byte count must be whole. Exponents,
// signs, thousands separators and values over math.MaxInt64 are refused.
//
// # Durations
//
// A duration is what time.ParseDuration accepts ("500ms", "5s", "1m30s"),
// except that negative durations are refused and the errors say what to type.
//
// # Caveats
//
//   - "MB" means 1000² bytes even though many tools print 1024² as "MB".
//     FormatSize never prints the bare-letter forms, so its output is
//     unambiguous and parses back to the same value.
package units
