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
	// info: log at info level by default (serve: one line per turn,
	// decision, approval, channel change); the one-shot commands log
	// warnings only.
	info bool
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
		newDiscordCmd(s),
		newSlackCmd(s),
		newVersionCmd(s),
		newInitCmd(s),
		newDoctorCmd(s),
		newConversationsCmd(s),
		newApprovalsCmd(s),
		newBackupCmd(s),
		newHealthCmd(s),
		newACPCmd(s),
	)
	return root
}
