// Package torture holds evspool's process-level fault tests: a chaos loop
// that SIGKILLs and SIGSTOPs the receiver and SIGKILLs evspool itself, a
// damaged spool under the CLI, and hostile input. It has no non-test code
// but this comment; the tests build the real binary. Short runs join
// `make test`; `make torture` runs them long (EVSPOOL_TORTURE=long).
package torture
