// Command kwok is the upstream kwok controller (fake nodes and pods), built
// from the pinned sigs.k8s.io/kwok module. kwok's packages expect the logger and
// the --config objects in the context before the root command runs.
package main

import (
	"os"

	"github.com/spf13/pflag"

	"sigs.k8s.io/kwok/pkg/config"
	"sigs.k8s.io/kwok/pkg/kwok/cmd"
	"sigs.k8s.io/kwok/pkg/log"
	"sigs.k8s.io/kwok/pkg/utils/signals"
)

func main() {
	flags := pflag.NewFlagSet("global", pflag.ContinueOnError)
	flags.ParseErrorsAllowlist.UnknownFlags = true
	flags.Usage = func() {}

	ctx := signals.SetupSignalContext()
	ctx, logger := log.InitFlags(ctx, flags)
	ctx, err := config.InitFlags(ctx, flags)
	if err != nil {
		logger.Error("init config flags", err)
		os.Exit(1)
	}
	root := cmd.NewCommand(ctx)
	root.PersistentFlags().AddFlagSet(flags)
	if err := root.ExecuteContext(ctx); err != nil {
		logger.Error("kwok exited", err)
		os.Exit(1)
	}
}
