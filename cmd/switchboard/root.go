package main

import (
	"io"
	"os"

	"github.com/spf13/cobra"
)

// streams are the process's standard files, passed explicitly so tests
// and subcommands never reach for globals.
type streams struct {
	in       io.Reader
	out, err io.Writer
	verbose  bool
}

func newRootCmd(stdin *os.File, stdout, stderr io.Writer) *cobra.Command {
	s := &streams{in: stdin, out: stdout, err: stderr}
	root := &cobra.Command{
		Use:           "switchboard",
		Short:         "Stateful AI agents in your chat apps, with tools on your machine",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.PersistentFlags().BoolVarP(&s.verbose, "verbose", "v", false, "log debug details to stderr")
	root.AddCommand(
		newServeCmd(s),
		newRunCmd(s),
		newChatCmd(s),
		newAgentsCmd(s),
		newPairCmd(s),
		newConfigCmd(s),
		newSlackCmd(s),
		newVersionCmd(s),
	)
	return root
}

func newVersionCmd(s *streams) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := io.WriteString(s.out, "switchboard "+version+"\n")
			return err
		},
	}
}
