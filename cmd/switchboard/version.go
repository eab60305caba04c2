package main

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
)

// buildTime may be set at build time with -ldflags "-X main.buildTime=…";
// the Go build info records the commit time, not the build time.
var buildTime = ""

// buildInfo is what `switchboard version` reports.
type buildInfo struct {
	Version   string `json:"version"`            // -X main.version, else the module version ("(devel)" for a checkout build)
	Module    string `json:"module"`             // the main module's path
	Revision  string `json:"revision,omitempty"` // VCS commit the binary was built from
	Modified  bool   `json:"modified"`           // the work tree had uncommitted changes
	Committed string `json:"committed,omitempty"`
	Built     string `json:"built,omitempty"`
	Go        string `json:"go"`
	Platform  string `json:"platform"`
}

// readBuildInfo combines the ldflags version with what the Go toolchain
// stamped into the binary (module version, vcs.revision, vcs.modified,
// vcs.time).
func readBuildInfo(ldVersion, ldBuilt string, read func() (*debug.BuildInfo, bool)) buildInfo {
	b := buildInfo{Version: ldVersion, Built: ldBuilt, Go: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	bi, ok := read()
	if !ok {
		return b
	}
	b.Module = bi.Main.Path
	b.Go = bi.GoVersion
	if b.Version == "" || b.Version == "dev" {
		if v := bi.Main.Version; v != "" {
			b.Version = v
		}
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			b.Revision = s.Value
		case "vcs.modified":
			b.Modified = s.Value == "true"
		case "vcs.time":
			b.Committed = s.Value
		}
	}
	return b
}

// String is the human form: one line of version and revision, one of
// toolchain and platform.
func (b buildInfo) String() string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "switchboard %s", b.Version)
	if b.Revision != "" {
		fmt.Fprintf(&sb, " (revision %s", b.Revision)
		if b.Modified {
			sb.WriteString(", modified")
		}
		if b.Committed != "" {
			fmt.Fprintf(&sb, ", committed %s", b.Committed)
		}
		sb.WriteString(")")
	}
	sb.WriteString("\n")
	fmt.Fprintf(&sb, "%s %s", b.Go, b.Platform)
	if b.Built != "" {
		fmt.Fprintf(&sb, ", built %s", b.Built)
	}
	sb.WriteString("\n")
	return sb.String()
}

func newVersionCmd(s *streams) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the version, the VCS revision it was built from and the Go toolchain",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			b := readBuildInfo(version, buildTime, debug.ReadBuildInfo)
			if asJSON {
				return printJSON(s.out, b)
			}
			_, err := fmt.Fprint(s.out, b.String())
			return err
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}
