package main

import (
	"archive/tar"
	"bytes"
	"debug/elf"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"
)

// The image is built as make image builds it, then opened as a runtime
// would: both tags, the config (entrypoint, user, labels, platform), the
// layer's files with their modes and owners, the user in /etc/passwd; the
// binary it holds is static and is run with --version.
func TestImage(t *testing.T) {
	out := t.TempDir()
	b, err := buildImage(options{version: testVersion, arch: runtime.GOARCH, out: out, revision: "0123abcd"})
	require.NoError(t, err)
	require.Equal(t, "evspool-image_1.2.3-test_"+runtime.GOARCH+".tar", filepath.Base(b.path))

	img := openImage(t, b.path, imageTag(testVersion), "latest")
	layers, err := img.Layers()
	require.NoError(t, err)
	require.Len(t, layers, 1, "one layer on an empty base: no base image")
	mt, err := layers[0].MediaType()
	require.NoError(t, err)
	require.Equal(t, types.OCILayer, mt)

	cf, err := img.ConfigFile()
	require.NoError(t, err)
	require.Equal(t, "linux", cf.OS)
	require.Equal(t, runtime.GOARCH, cf.Architecture)
	require.Equal(t, []string{imageBin}, cf.Config.Entrypoint)
	require.Equal(t, "65532:65532", cf.Config.User, "not root by default")
	require.Equal(t, testVersion, cf.Config.Labels["org.opencontainers.image.version"])
	require.Equal(t, "0123abcd", cf.Config.Labels["org.opencontainers.image.revision"])
	require.Equal(t, "evspool", cf.Config.Labels["org.opencontainers.image.title"])
	require.Equal(t, sourceRepo, cf.Config.Labels["org.opencontainers.image.source"])
	require.Equal(t, licenseID, cf.Config.Labels["org.opencontainers.image.licenses"])
	date, err := sourceDate()
	require.NoError(t, err)
	require.Equal(t, date, cf.Created.UTC(), "created: the commit's time (or SOURCE_DATE_EPOCH), not year 1")
	require.Equal(t, date.Format(time.RFC3339), cf.Config.Labels["org.opencontainers.image.created"])

	files := readLayer(t, mutate.Extract(img))
	require.Equal(t, []string{"etc", "etc/group", "etc/passwd", "tmp", "usr", "usr/local", "usr/local/bin", "usr/local/bin/evspool",
		"usr/local/bin/evspool-install", "usr/share", "usr/share/licenses", "usr/share/licenses/evspool", "usr/share/licenses/evspool/LICENSE"},
		slices.Sorted(maps.Keys(files)), "nothing but evspool, what naming its user needs and its licence")
	license, err := os.ReadFile(licenseFile)
	require.NoError(t, err)
	require.Equal(t, string(license), string(files["usr/share/licenses/evspool/LICENSE"].body))
	for path, mode := range map[string]int64{"usr/local/bin/evspool": 0o755, "usr/local/bin/evspool-install": 0o755,
		"etc/passwd": 0o644, "etc/group": 0o644, "tmp": 0o1777, "usr/share/licenses/evspool/LICENSE": 0o644} {
		require.Equal(t, mode, files[path].hdr.Mode, path)
		require.Zero(t, files[path].hdr.Uid, path)
	}
	require.Contains(t, string(files["etc/passwd"].body), "\nevspool:x:65532:65532:", "the config's user has a name")
	require.Contains(t, string(files["etc/group"].body), "\nevspool:x:65532:")

	bin := filepath.Join(t.TempDir(), "evspool")
	require.NoError(t, os.WriteFile(bin, files["usr/local/bin/evspool"].body, 0o755))
	ef, err := elf.Open(bin)
	require.NoError(t, err)
	for _, p := range ef.Progs {
		require.NotEqual(t, elf.PT_INTERP, p.Type, "static: an empty base has no dynamic loader")
	}
	require.NoError(t, ef.Close())
	checkInstaller(t, files["usr/local/bin/evspool-install"].body)
	version := run(t, bin, "--version")
	require.Equal(t, "evspool "+testVersion+" ("+runtime.Version()+")\n", version)
	t.Logf("image %s: %d bytes (binary %d bytes), base scratch (empty.Image), entrypoint %v, user %s, licenses %s, created %s; --version: %s",
		filepath.Base(b.path), b.size, len(files["usr/local/bin/evspool"].body), cf.Config.Entrypoint, cf.Config.User,
		cf.Config.Labels["org.opencontainers.image.licenses"], cf.Created.UTC().Format(time.RFC3339), strings.TrimSpace(version))
}

// openImage unpacks the oci-archive at path, checks that index.json names
// one image by each of tags, and returns it.
func openImage(t *testing.T, path string, tags ...string) v1.Image {
	t.Helper()
	dir := t.TempDir()
	run(t, "tar", "-xf", path, "-C", dir)
	l, err := layout.FromPath(dir)
	require.NoError(t, err)
	idx, err := l.ImageIndex()
	require.NoError(t, err)
	im, err := idx.IndexManifest()
	require.NoError(t, err)
	var got []string
	for _, d := range im.Manifests {
		require.Equal(t, types.OCIManifestSchema1, d.MediaType)
		require.Equal(t, im.Manifests[0].Digest, d.Digest, "one image under every tag")
		got = append(got, d.Annotations["org.opencontainers.image.ref.name"])
		require.Equal(t, "docker.io/library/"+imageRepo+":"+d.Annotations["org.opencontainers.image.ref.name"], d.Annotations["io.containerd.image.name"])
	}
	require.Equal(t, tags, got)
	img, err := idx.Image(im.Manifests[0].Digest)
	require.NoError(t, err)
	cmt, err := img.MediaType()
	require.NoError(t, err)
	require.Equal(t, types.OCIManifestSchema1, cmt)
	return img
}

type layerFile struct {
	hdr  *tar.Header
	body []byte
}

func readLayer(t *testing.T, rc io.ReadCloser) map[string]layerFile {
	t.Helper()
	defer rc.Close()
	files := map[string]layerFile{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return files
		}
		require.NoError(t, err)
		body, err := io.ReadAll(tr)
		require.NoError(t, err)
		files[h.Name] = layerFile{hdr: h, body: body}
	}
}

// checkInstaller runs the image's evspool-install: it is static, refuses
// to run without a directory (exit 2) and fails with exit 1, saying why,
// where it cannot copy (outside the image there is no
// /usr/local/bin/evspool; installer/main_test.go checks the copy).
func checkInstaller(t *testing.T, body []byte) {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "evspool-install")
	require.NoError(t, os.WriteFile(bin, body, 0o755))
	ef, err := elf.Open(bin)
	require.NoError(t, err)
	for _, p := range ef.Progs {
		require.NotEqual(t, elf.PT_INTERP, p.Type, "static")
	}
	require.NoError(t, ef.Close())
	out, err := exec.Command(bin).CombinedOutput()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee)
	require.Equal(t, 2, ee.ExitCode(), "%s", out)
	require.Contains(t, string(out), "usage: evspool-install DIR")
	out, err = exec.Command(bin, t.TempDir()).CombinedOutput()
	require.ErrorAs(t, err, &ee)
	require.Equal(t, 1, ee.ExitCode(), "%s", out)
	require.Contains(t, string(out), "evspool-install: ")
}

// deploy/kubernetes.yaml runs the evspool of this image on every
// Kubernetes: an init container of the image, by the pinned tag make image
// gives it (not latest), runs its evspool-install into an emptyDir, and the
// PTP container runs evspool from that volume's mount. It shares the
// host's pid namespace, as the ptp-operator's DaemonSet does.
func TestKubernetesUsesImage(t *testing.T) {
	raw, err := os.ReadFile("../deploy/kubernetes.yaml")
	require.NoError(t, err)
	type container struct {
		Name         string   `yaml:"name"`
		Image        string   `yaml:"image"`
		Command      []string `yaml:"command"`
		VolumeMounts []struct {
			Name      string `yaml:"name"`
			MountPath string `yaml:"mountPath"`
		} `yaml:"volumeMounts"`
	}
	type daemonSet struct {
		Kind string `yaml:"kind"`
		Spec struct {
			Template struct {
				Spec struct {
					HostPID        bool        `yaml:"hostPID"`
					InitContainers []container `yaml:"initContainers"`
					Containers     []container `yaml:"containers"`
					Volumes        []struct {
						Name     string    `yaml:"name"`
						EmptyDir *struct{} `yaml:"emptyDir"`
					} `yaml:"volumes"`
				} `yaml:"spec"`
			} `yaml:"template"`
		} `yaml:"spec"`
	}
	var ds daemonSet
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	for ds.Kind != "DaemonSet" {
		ds = daemonSet{}
		require.NoError(t, dec.Decode(&ds), "a DaemonSet among the manifest's documents")
	}
	pod := ds.Spec.Template.Spec
	require.True(t, pod.HostPID, "hostPID: true, as the ptp-operator's linuxptp-daemon")
	emptyDirs := map[string]bool{}
	for _, v := range pod.Volumes {
		emptyDirs[v.Name] = v.EmptyDir != nil
	}
	installed := map[string]string{} // volume: the evspool installed in it, as the init container sees it
	for _, c := range pod.InitContainers {
		ref, err := name.ParseReference(c.Image, name.WeakValidation)
		require.NoError(t, err, c.Image)
		if ref.Context().Name() != "index.docker.io/library/"+imageRepo {
			continue
		}
		tag, ok := ref.(name.Tag)
		require.True(t, ok, "%s: a tag make image gives", c.Image)
		require.NotEqual(t, "latest", tag.TagStr(), "a pinned tag")
		require.Equal(t, imageTag(tag.TagStr()), tag.TagStr(), "a tag of imageTag's form")
		require.Len(t, c.Command, 2)
		require.Equal(t, installBin, c.Command[0], "the init container runs the image's installer")
		for _, m := range c.VolumeMounts {
			if filepath.Clean(m.MountPath) == filepath.Clean(c.Command[1]) {
				require.True(t, emptyDirs[m.Name], "volume %s is an emptyDir", m.Name)
				installed[m.Name] = filepath.Join(c.Command[1], "evspool")
			}
		}
	}
	require.Len(t, installed, 1, "one init container installs evspool into a volume")
	found := 0
	for _, c := range pod.Containers {
		if len(c.Command) == 0 || filepath.Base(c.Command[0]) != "evspool" {
			continue
		}
		found++
		var paths []string
		for _, m := range c.VolumeMounts {
			if _, ok := installed[m.Name]; ok {
				paths = append(paths, filepath.Join(m.MountPath, "evspool"))
			}
		}
		require.Contains(t, paths, c.Command[0], "container %s runs the evspool the init container installed", c.Name)
	}
	require.Equal(t, 1, found)
}
