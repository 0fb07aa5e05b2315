package main

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// The OCI image (make image): a static evspool on an empty base (no
// shell, no libc, nothing to pull), a non-root user to run it as, and the
// org.opencontainers.image labels. Written as an OCI image layout packed in
// a tar (an oci-archive), which docker load (25 and later), podman load,
// ctr images import, kind load image-archive and skopeo read.
const (
	imageRepo  = "evspool"                        // the image's name in the tarball; kubernetes.yaml uses it
	imageBin   = "/usr/local/bin/evspool"         // the entrypoint
	installBin = "/usr/local/bin/evspool-install" // copies imageBin into a volume (installer/)
	imageUID   = 65532                            // the user "evspool", as distroless names its nonroot
	imageUser  = "evspool"
	imageFile  = "evspool-image_%s_%s.tar" // version tag, arch
	sourceRepo = "https://github.com/evspool/evspool"
)

// imageTag is version as an image tag accepts it ([A-Za-z0-9_.-]).
func imageTag(version string) string {
	return strings.NewReplacer("~", "-", "+", "-").Replace(version)
}

// buildImage compiles evspool for o.arch and writes the image, named
// evspool:<tag> (imageTag of the version) and evspool:latest, to o.out.
func buildImage(o options) (built, error) {
	if !validVersion.MatchString(o.version) {
		return built{}, fmt.Errorf("-version %q: give a version that starts with a digit, made of letters, digits and . + ~ (e.g. 0.1.0 or 0.1.0~git1a2b3c4d)", o.version)
	}
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return built{}, err
	}
	work, err := os.MkdirTemp("", "evspool-image")
	if err != nil {
		return built{}, err
	}
	defer os.RemoveAll(work)
	bin := filepath.Join(work, "evspool")
	if err := goBuild(o.arch, o.version, bin); err != nil {
		return built{}, err
	}
	installer := filepath.Join(work, "evspool-install")
	if err := goBuildInstaller(o.arch, installer); err != nil {
		return built{}, err
	}
	if o.date, err = sourceDate(); err != nil {
		return built{}, err
	}
	img, err := image(o, bin, installer)
	if err != nil {
		return built{}, err
	}
	tag := imageTag(o.version)
	dir := filepath.Join(work, "layout")
	if err := writeLayout(dir, img, tag, "latest"); err != nil {
		return built{}, err
	}
	path := filepath.Join(o.out, fmt.Sprintf(imageFile, tag, o.arch))
	if err := tarDir(dir, path); err != nil {
		return built{}, fmt.Errorf("write %s: %w", path, err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		return built{}, err
	}
	return built{path: path, size: fi.Size()}, nil
}

// image is the empty image plus one layer holding bin and installer, with
// its config.
func image(o options, bin, installer string) (v1.Image, error) {
	raw, err := os.ReadFile(bin)
	if err != nil {
		return nil, err
	}
	inst, err := os.ReadFile(installer)
	if err != nil {
		return nil, err
	}
	license, err := os.ReadFile(licenseFile)
	if err != nil {
		return nil, err
	}
	layerTar, err := rootfs(raw, inst, license)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, err
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err = mutate.AppendLayers(img, layer)
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", o.arch
	cf.Config.Entrypoint = []string{imageBin}
	cf.Config.User = fmt.Sprintf("%d:%d", imageUID, imageUID)
	cf.Config.Env = []string{"PATH=/usr/local/bin"}
	cf.Config.WorkingDir = "/"
	cf.Created = v1.Time{Time: o.date}
	cf.Config.Labels = map[string]string{
		"org.opencontainers.image.licenses":    licenseID,
		"org.opencontainers.image.created":     o.date.Format(time.RFC3339),
		"org.opencontainers.image.title":       "evspool",
		"org.opencontainers.image.description": "Durable event forwarding for node daemons: a bounded on-disk spool in front of a receiver's socket",
		"org.opencontainers.image.version":     o.version,
		"org.opencontainers.image.source":      sourceRepo,
		"org.opencontainers.image.base.name":   "scratch",
	}
	if o.revision != "" {
		cf.Config.Labels["org.opencontainers.image.revision"] = o.revision
	}
	return mutate.ConfigFile(img, cf)
}

// rootfs is the layer's tar: the binary, /etc/passwd and /etc/group with
// root and the evspool user, /tmp (evspool demo and a spool on the
// container's own file system need somewhere to write), the installer an
// init container runs, and the licence's text. Owners are numeric, times
// zero, so that the same binaries make the same layer.
func rootfs(bin, installer, license []byte) ([]byte, error) {
	passwd := fmt.Sprintf("root:x:0:0:root:/root:/sbin/nologin\n%s:x:%d:%d:%s:/nonexistent:/sbin/nologin\n", imageUser, imageUID, imageUID, imageUser)
	group := fmt.Sprintf("root:x:0:\n%s:x:%d:\n", imageUser, imageUID)
	entries := []struct {
		name string
		mode int64
		body []byte // nil: a directory
	}{
		{"etc/", 0o755, nil},
		{"etc/group", 0o644, []byte(group)},
		{"etc/passwd", 0o644, []byte(passwd)},
		{"tmp/", 0o1777, nil},
		{"usr/", 0o755, nil},
		{"usr/local/", 0o755, nil},
		{"usr/local/bin/", 0o755, nil},
		{"usr/share/", 0o755, nil},
		{"usr/share/licenses/", 0o755, nil},
		{"usr/share/licenses/evspool/", 0o755, nil},
		{"usr/share/licenses/evspool/LICENSE", 0o644, license},
		{strings.TrimPrefix(imageBin, "/"), 0o755, bin},
		{strings.TrimPrefix(installBin, "/"), 0o755, installer},
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Mode: e.mode, Typeflag: tar.TypeDir, Format: tar.FormatPAX}
		if e.body != nil {
			h.Typeflag, h.Size = tar.TypeReg, int64(len(e.body))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(e.body); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// writeLayout writes img as an OCI image layout in dir, once per tag, each
// entry of index.json annotated with its tag (OCI's ref.name) and its full
// name (what containerd and docker load name the image by).
func writeLayout(dir string, img v1.Image, tags ...string) error {
	l, err := layout.Write(dir, empty.Index)
	if err != nil {
		return err
	}
	for _, tag := range tags {
		full := "docker.io/library/" + imageRepo + ":" + tag // containerd's normal form
		if _, err := name.NewTag(full, name.StrictValidation); err != nil {
			return fmt.Errorf("image tag %q: %w", tag, err)
		}
		if err := l.AppendImage(img, layout.WithAnnotations(map[string]string{
			"org.opencontainers.image.ref.name": tag,
			"io.containerd.image.name":          full,
		})); err != nil {
			return err
		}
	}
	return nil
}

// tarDir packs the files under dir into the tar file path, with names
// relative to dir.
func tarDir(dir, path string) (err error) {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			os.Remove(path)
		}
	}()
	tw := tar.NewWriter(f)
	if err := tw.AddFS(os.DirFS(dir)); err != nil {
		return err
	}
	return tw.Close()
}
