package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// Env looks up an environment variable the way os.LookupEnv does. Production
// code passes os.LookupEnv; tests pass [MapEnv].
type Env func(key string) (string, bool)

// MapEnv returns an Env that looks variables up in m. A nil map is an empty
// environment.
func MapEnv(m map[string]string) Env {
	return func(key string) (string, bool) {
		v, ok := m[key]
		return v, ok
	}
}

// FileName is the name of the config file inside the data directory.
const FileName = "switchboard.toml"

// Paths says where switchboard keeps its data and which config file applies.
type Paths struct {
	// Home is the data directory: $SWITCHBOARD_HOME, else ~/.switchboard.
	// Always absolute. It need not exist yet.
	Home string
	// ConfigFile is the config file to read, absolute, or "" when there is
	// none (zero config).
	ConfigFile string
	// BaseDir is the directory relative paths in the config resolve against:
	// the config file's directory, or the current directory without a file.
	BaseDir string
	// Cwd is the current directory: the default agent's workspace when the
	// config defines no [agents] (so `switchboard chat` works where it is
	// started, whichever file configures it).
	Cwd string
}

// Locate finds the data directory and the config file. Home is
// $SWITCHBOARD_HOME or ~/.switchboard (via $HOME). The config file is
// $SWITCHBOARD_CONFIG, which must then exist; else $Home/switchboard.toml if it
// exists; else none. Relative paths in variables resolve against cwd. Empty
// variables count as unset.
func Locate(env Env, cwd string) (Paths, error) {
	cwd, err := filepath.Abs(cwd)
	if err != nil {
		return Paths{}, fmt.Errorf("resolve the current directory %q: %w", cwd, err)
	}
	abs := func(p string) string {
		if filepath.IsAbs(p) {
			return filepath.Clean(p)
		}
		return filepath.Join(cwd, p)
	}

	var paths Paths
	if home, ok := env("SWITCHBOARD_HOME"); ok && home != "" {
		paths.Home = abs(home)
	} else if userHome, ok := env("HOME"); ok && userHome != "" {
		paths.Home = filepath.Join(abs(userHome), ".switchboard")
	} else {
		return Paths{}, errors.New("cannot find the data directory: neither SWITCHBOARD_HOME nor HOME is set; set SWITCHBOARD_HOME to the directory switchboard should keep its data in")
	}

	if file, ok := env("SWITCHBOARD_CONFIG"); ok && file != "" {
		file = abs(file)
		info, err := os.Stat(file)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return Paths{}, fmt.Errorf("SWITCHBOARD_CONFIG names %s, which does not exist: create it, or unset SWITCHBOARD_CONFIG to use %s", file, filepath.Join(paths.Home, FileName))
		case err != nil:
			return Paths{}, fmt.Errorf("SWITCHBOARD_CONFIG names %s, which cannot be read: %w", file, err)
		case info.IsDir():
			return Paths{}, fmt.Errorf("SWITCHBOARD_CONFIG names %s, which is a directory: point it at a TOML file", file)
		}
		paths.ConfigFile = file
	} else {
		file := filepath.Join(paths.Home, FileName)
		info, err := os.Stat(file)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			// No file: zero config.
		case err != nil:
			return Paths{}, fmt.Errorf("check for the config file %s: %w", file, err)
		case info.IsDir():
			return Paths{}, fmt.Errorf("the config file %s is a directory: remove it or make it a TOML file", file)
		default:
			paths.ConfigFile = file
		}
	}

	paths.BaseDir = cwd
	paths.Cwd = cwd
	if paths.ConfigFile != "" {
		paths.BaseDir = filepath.Dir(paths.ConfigFile)
	}
	return paths, nil
}
