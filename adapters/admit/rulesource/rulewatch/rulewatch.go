// Package rulewatch keeps a rulefile.Live in step with a rule file on
// disk: on every change it reads the file again (YAML, or JSON by its
// ".json" name) and applies it; a file with an error is logged with its
// file, line and field, and the rules in force stay.
package rulewatch

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/sluice-go/sluice/adapters/admit/rulefile"
	"github.com/sluice-go/sluice/adapters/admit/rulesource/ruleyaml"
)

// Watch applies the file at path to live whenever it changes, until ctx
// ends, and returns then. It watches the file's directory, so that an
// editor's rename over the file and a Kubernetes ConfigMap's symlink swap
// are seen as well as a write; changes within settle of each other are
// read once. logger (default slog.Default()) hears of every version
// applied and every file refused. The error is the watcher's, at start.
func Watch(ctx context.Context, live *rulefile.Live, path string, settle time.Duration, logger *slog.Logger) error {
	if logger == nil {
		logger = slog.Default()
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("rulewatch: %w", err)
	}
	defer w.Close()
	if err := w.Add(filepath.Dir(path)); err != nil {
		return fmt.Errorf("rulewatch: %w", err)
	}
	apply := func() {
		f, err := ruleyaml.LoadFile(path)
		if err == nil {
			err = live.Apply(f)
		}
		var fe *rulefile.Error
		switch {
		case errors.As(err, &fe):
			logger.Error("sluice: rule file refused; the rules in force stay", "file", fe.File, "line", fe.Line, "field", fe.Field, "error", fe.Msg)
		case err != nil:
			logger.Error("sluice: rule file refused; the rules in force stay", "path", path, "error", err)
		default:
			logger.Info("sluice: rules in force", "path", path, "version", live.Version())
		}
	}
	var timer <-chan time.Time
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-w.Events:
			if !ok {
				return nil
			}
			if filepath.Base(ev.Name) == filepath.Base(path) || ev.Has(fsnotify.Create) {
				timer = time.After(settle)
			}
		case err, ok := <-w.Errors:
			if !ok {
				return nil
			}
			logger.Error("sluice: rule file watcher", "path", path, "error", err)
		case <-timer:
			timer = nil
			apply()
		}
	}
}
