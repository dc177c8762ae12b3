package main

import (
	"context"
	"embed"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/peterbourgon/ff/v3"
	"github.com/peterbourgon/ff/v3/ffcli"
)

// Exit codes shared by every command.
const (
	exitOK       = 0
	exitFindings = 1 // diff --fail-on matched, demo missed or falsely aborted
	exitUsage    = 2 // bad flags, arguments or inputs
)

// usageError marks an error of the command line or its inputs: exitUsage.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func usagef(format string, args ...any) error { return usageError{fmt.Errorf(format, args...)} }

type exitError struct{ code int }

func (e exitError) Error() string { return fmt.Sprintf("exit status %d", e.code) }

type env struct {
	stdin          io.Reader
	stdout, stderr io.Writer
}

var ffOptions = []ff.Option{ff.WithEnvVarPrefix("CARDDRIFT")}

// helpFiles describe the commands: help/<name>.txt holds the usage line,
// the one-line help, a blank line and the long help.
//
//go:embed help/*.txt
var helpFiles embed.FS

func describe(name string) *ffcli.Command {
	b, err := helpFiles.ReadFile("help/" + name + ".txt")
	if err != nil {
		panic(err) // every command has a help file: TestHelp
	}
	usage, rest, _ := strings.Cut(string(b), "\n")
	short, long, _ := strings.Cut(rest, "\n\n")
	return &ffcli.Command{Name: name, ShortUsage: usage, ShortHelp: short, LongHelp: strings.TrimSuffix(long, "\n")}
}

// commandFlags are the flags of a command that takes no arguments.
type commandFlags interface {
	register(fs *flag.FlagSet)
	run(ctx context.Context, e *env) error
}

func noArgsCommand(e *env, name string, f commandFlags) *ffcli.Command {
	return newCommand(e, name, f.register, func(ctx context.Context, args []string) error {
		if len(args) > 0 {
			return usagef("%s takes no arguments", name)
		}
		return f.run(ctx, e)
	})
}

func newCommand(e *env, name string, register func(*flag.FlagSet), exec func(context.Context, []string) error) *ffcli.Command {
	c := describe(name)
	fs := newFlagSet(name, e)
	register(fs)
	c.FlagSet, c.Options = fs, ffOptions
	c.Exec = func(ctx context.Context, args []string) error {
		args, err := parseInterspersed(fs, args)
		if err != nil {
			return usageError{err}
		}
		return exec(ctx, args)
	}
	return c
}

func newFlagSet(name string, e *env) *flag.FlagSet {
	fs := flag.NewFlagSet("carddrift "+name, flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	return fs
}

// parseInterspersed lets flags follow positional arguments, as in
// `carddrift pin card.json --json`: the flag package stops at the first
// positional, so what follows each one is parsed again. "--" ends flag
// parsing.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for len(args) > 0 {
		if args[0] == "--" {
			return append(pos, args[1:]...), nil
		}
		pos = append(pos, args[0])
		rest := args[1:]
		if err := fs.Parse(rest); err != nil {
			return nil, err
		}
		args = fs.Args()
		if n := len(rest) - len(args); n > 0 && rest[n-1] == "--" {
			return append(pos, args...), nil
		}
	}
	return pos, nil
}

// run runs one subcommand and returns the process exit status.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == rawConsumerCommand { // bench's baseline, hidden
		return runRawConsumer(ctx, args[1:], stdin, stdout, stderr)
	}
	e := &env{stdin: stdin, stdout: stdout, stderr: stderr}
	diff, pin := &diffFlags{}, &pinFlags{}
	root := &ffcli.Command{
		Name:       "carddrift",
		ShortUsage: "carddrift <command> [flags] [args]",
		LongHelp:   "carddrift detects A2A agent-card drift for in-flight tasks.\nEvery flag can also be set as CARDDRIFT_<FLAG_NAME> (for example CARDDRIFT_NATS_URL).",
		FlagSet:    newFlagSet("", e),
		Subcommands: []*ffcli.Command{
			newCommand(e, "diff", diff.register, func(ctx context.Context, args []string) error { return diff.run(ctx, e, args) }),
			newCommand(e, "pin", pin.register, func(ctx context.Context, args []string) error { return pin.run(ctx, e, args) }),
			noArgsCommand(e, "serve", &serveFlags{}),
			noArgsCommand(e, "watch", &watchFlags{}),
			noArgsCommand(e, "demo", &demoFlags{}),
			noArgsCommand(e, "simulate", &simulateFlags{}),
			noArgsCommand(e, "replay", &replayFlags{}),
			noArgsCommand(e, "impact", &impactFlags{}),
			noArgsCommand(e, "fleet", &fleetFlags{}),
			noArgsCommand(e, "bench", &benchFlags{}),
		},
		Options: ffOptions,
		Exec: func(context.Context, []string) error {
			return flag.ErrHelp
		},
	}
	if err := root.Parse(args); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(stderr, "carddrift:", err)
		}
		return exitUsage
	}
	err := root.Run(ctx)
	var ee exitError
	var ue usageError
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, flag.ErrHelp):
		if len(args) == 0 {
			fmt.Fprintln(stderr, ffcli.DefaultUsageFunc(root))
		}
		return exitUsage
	case errors.As(err, &ee):
		return ee.code
	case errors.As(err, &ue):
		fmt.Fprintln(stderr, "carddrift:", err)
		return exitUsage
	default:
		fmt.Fprintln(stderr, "carddrift:", err)
		return 1
	}
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
