package main

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// The project's licence, as the packages and the image declare it: the
// SPDX identifier (rpm's License, the image's licenses label) and the file
// whose text they carry (LICENSE at the repository's root).
const (
	licenseID   = "Apache-2.0"
	licenseFile = "../LICENSE"
	maintainer  = "evspool maintainers <maintainers@evspool.invalid>"
	changesURL  = sourceRepo + "/blob/main/CHANGELOG.md"
)

// sourceDate is the time the packages and the image say they were made:
// SOURCE_DATE_EPOCH when set (reproducible builds), else the time of the
// commit they are built from, so that the same commit makes the same
// dates. Outside a git checkout, with neither, it is an error: a build
// date of year 1 or of "now" says nothing true about the source.
func sourceDate() (time.Time, error) {
	epoch := os.Getenv("SOURCE_DATE_EPOCH")
	from := "SOURCE_DATE_EPOCH"
	if epoch == "" {
		out, err := exec.Command("git", "-C", "..", "log", "-1", "--format=%ct").Output()
		if err != nil {
			return time.Time{}, fmt.Errorf("no SOURCE_DATE_EPOCH and no git commit to date the build by (%v): set SOURCE_DATE_EPOCH to the source's time in seconds since 1970", err)
		}
		epoch, from = strings.TrimSpace(string(out)), "git log -1 --format=%ct"
	}
	sec, err := strconv.ParseInt(epoch, 10, 64)
	if err != nil || sec <= 0 {
		return time.Time{}, fmt.Errorf("%s %q: want seconds since 1970, e.g. $(git log -1 --format=%%ct)", from, epoch)
	}
	return time.Unix(sec, 0).UTC(), nil
}

// lintianOverrides are the lintian tags the .deb carries on purpose, each
// with its reason: Go builds evspool static (no cgo), so that one binary
// runs on every distribution and in an image with no libc.
const lintianOverrides = `# Go, without cgo: one binary for every distribution and the empty image.
evspool: statically-linked-binary [usr/bin/evspool]
`

// debCopyright is the .deb's /usr/share/doc/evspool/copyright in Debian's
// machine-readable format; it refers to Debian's own copy of the licence
// text, as Debian policy asks of Apache-2.0.
func debCopyright(year int) string {
	return `Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: evspool
Upstream-Contact: ` + maintainer + `
Source: ` + sourceRepo + `

Files: *
Copyright: ` + strconv.Itoa(year) + ` The evspool Authors
License: ` + licenseID + `

License: ` + licenseID + `
 Licensed under the Apache License, Version 2.0 (the "License");
 you may not use this file except in compliance with the License.
 You may obtain a copy of the License at
 .
     http://www.apache.org/licenses/LICENSE-2.0
 .
 Unless required by applicable law or agreed to in writing, software
 distributed under the License is distributed on an "AS IS" BASIS,
 WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
 See the License for the specific language governing permissions and
 limitations under the License.
 .
 On Debian systems, the complete text of the Apache License, Version 2.0
 can be found in "/usr/share/common-licenses/Apache-2.0".
`
}

// changelog is the packages' changelog (nfpm's chglog format): one entry,
// the version being built, dated by sourceDate. The project's own history
// is CHANGELOG.md in the repository; the entry points there.
func changelog(version, release, revision string, date time.Time) string {
	from := "this source"
	if revision != "" {
		from = "revision " + revision
	}
	return fmt.Sprintf(`- semver: %s-%s
  date: %s
  packager: %s
  deb:
    urgency: medium
    distributions: [unstable]
  changes:
    - note: |-
        Packaged from %s.
        What changed: %s
`, version, release, date.Format(time.RFC3339), maintainer, from, changesURL)
}
