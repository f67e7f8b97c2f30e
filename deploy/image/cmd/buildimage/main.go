// Command buildimage builds the convstream container image (package image)
// and writes it as an OCI image layout, without a container daemon:
//
//	cd deploy/image && go run ./cmd/buildimage --module ../.. --out ../../bin/image
//
// which `make image` runs. The version, revision and time come from the
// checkout (SOURCE_DATE_EPOCH overrides the time). To load the layout:
// `skopeo copy oci:bin/image:TAG docker-daemon:convstream:TAG`, or push it
// with `crane push bin/image REGISTRY/convstream:TAG` or
// `skopeo copy --all oci:bin/image:TAG docker://REGISTRY/convstream:TAG`.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/convstream/convstream/deploy/image"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	err := run(ctx, os.Args[1:])
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "buildimage:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("buildimage", flag.ContinueOnError)
	module := fs.String("module", "../..", "root of the convstream module")
	out := fs.String("out", "../../bin/image", "OCI image layout to write (replaced)")
	version := fs.String("version", "", "image version and tag (default: git describe, without the v)")
	platforms := fs.String("platforms", "linux/amd64,linux/arm64", "comma-separated OS/ARCH to build")
	if err := fs.Parse(args); err != nil {
		return err
	}
	cfg := image.Config{ModuleDir: *module, Version: *version, Log: os.Stderr}
	for _, p := range strings.Split(*platforms, ",") {
		goos, arch, ok := strings.Cut(strings.TrimSpace(p), "/")
		if !ok {
			return fmt.Errorf("--platforms: %q is not OS/ARCH", p)
		}
		cfg.Platforms = append(cfg.Platforms, v1.Platform{OS: goos, Architecture: arch})
	}
	cfg, err := image.FromGit(ctx, cfg, os.Getenv("SOURCE_DATE_EPOCH"))
	if err != nil {
		return err
	}
	idx, err := image.Build(ctx, cfg)
	if err != nil {
		return err
	}
	if _, err := image.WriteLayout(*out, idx, cfg.Version); err != nil {
		return err
	}
	d, err := idx.Digest()
	if err != nil {
		return err
	}
	fmt.Printf("%s: convstream:%s %s\n", *out, cfg.Version, d)
	return nil
}
