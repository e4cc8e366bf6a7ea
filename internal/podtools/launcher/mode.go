package launcher

import (
	"errors"
	"fmt"
	"slices"

	"github.com/paddlejob/paddlejob/internal/shellwords"
)

// Mode is how the launcher hands the peers to the Paddle processes.
type Mode string

const (
	// ModeFleet (the default) runs PaddlePaddle 2.x/3.x programs and
	// describes the job in the environment variables
	// paddle.distributed.fleet's PaddleCloudRoleMaker reads; the arguments
	// after `--` reach the program unchanged.
	ModeFleet Mode = "fleet"
	// ModeLegacyFlags runs PaddlePaddle v1's `paddle pserver` and
	// `paddle train` with the v1 flags built from CONF_PADDLE_* (the three-node tutorial's
	// start_paddle.py). Only PaddlePaddle v1 images have those binaries.
	ModeLegacyFlags Mode = "legacy-flags"
)

// The v1 binaries legacy-flags mode runs unless told otherwise.
const (
	LegacyPServerCmd = "paddle pserver"
	LegacyTrainerCmd = "paddle train"
)

// ParseMode validates a --mode value.
func ParseMode(s string) (Mode, error) {
	switch m := Mode(s); m {
	case ModeFleet, ModeLegacyFlags:
		return m, nil
	}
	return "", fmt.Errorf("--mode=%q: want %q or %q", s, ModeFleet, ModeLegacyFlags)
}

// commands are the command lines of the two processes. In fleet mode they
// are complete; in legacy-flags mode the generated v1 flags (and, for the
// trainer, the extra arguments) follow them.
type commands struct {
	pserver []string
	trainer []string
}

// resolveCommands picks the pserver's and the trainer's command lines.
//
// Fleet mode: each is its flag (--pserver-cmd, --trainer-cmd) followed by
// the arguments after `--`; the pserver's flag defaults to the trainer's.
// Without either flag the arguments after `--` are the whole command line,
// so `paddlejob launch -- python train.py` runs train.py in both roles.
//
// Legacy-flags mode: the flags, defaulting to `paddle pserver` and
// `paddle train`; the arguments after `--` are the trainer's (see
// trainerArgs).
func resolveCommands(mode Mode, pserverCmd, trainerCmd string, extra []string) (commands, error) {
	if mode == ModeLegacyFlags {
		if pserverCmd == "" {
			pserverCmd = LegacyPServerCmd
		}
		if trainerCmd == "" {
			trainerCmd = LegacyTrainerCmd
		}
		ps, err := splitCommand("pserver", pserverCmd)
		if err != nil {
			return commands{}, err
		}
		tr, err := splitCommand("trainer", trainerCmd)
		if err != nil {
			return commands{}, err
		}
		return commands{pserver: ps, trainer: tr}, nil
	}

	if pserverCmd != "" && trainerCmd == "" {
		return commands{}, errors.New("--pserver-cmd without --trainer-cmd: in fleet mode the arguments after -- follow both commands; give --trainer-cmd too (e.g. --trainer-cmd 'python train.py'), or neither to run the program after -- in both roles")
	}
	tr, err := splitCommand("trainer", trainerCmd)
	if err != nil {
		return commands{}, err
	}
	ps := slices.Clone(tr)
	if pserverCmd != "" {
		if ps, err = splitCommand("pserver", pserverCmd); err != nil {
			return commands{}, err
		}
	}
	cmds := commands{
		pserver: append(ps, extra...),
		trainer: append(tr, extra...),
	}
	if len(cmds.trainer) == 0 {
		return commands{}, errors.New("no program to run: in fleet mode give the Paddle program after --, e.g. `paddlejob launch -- python train.py`, or --trainer-cmd")
	}
	return cmds, nil
}

// splitCommand splits a --pserver-cmd or --trainer-cmd value into words;
// an empty value is no words. A non-empty value must name a program.
func splitCommand(role, cmdline string) ([]string, error) {
	argv, err := shellwords.Split(cmdline)
	if err == nil && len(argv) == 0 && cmdline != "" {
		err = errors.New("the command is empty")
	}
	if err != nil {
		return nil, fmt.Errorf("--%s-cmd: %w", role, err)
	}
	return slices.Clip(argv), nil
}
