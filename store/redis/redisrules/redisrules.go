// Package redisrules publishes a fleet's rule file through Redis and keeps
// every instance on the version published: Publish stores a file's bytes
// under a key and announces it; Follow, on each instance, applies the
// version stored there at start, on every announcement (pub/sub, one
// round trip after Publish), and on a poll that catches an announcement
// missed while disconnected. Every instance thus converges on the last
// version published: within a round trip when connected, within the poll
// interval otherwise. A version an instance refuses (a bad file) is
// logged and skipped; the instance keeps the rules in force until the
// next version.
//
// The bytes are the user's to read: Follow hands them to an apply
// function, which parses them (rulefile.Load, ruleyaml.Load) and swaps
// them in (rulefile.Live.Apply).
package redisrules

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// MaxSize is the largest rule file Publish stores and Follow reads.
const MaxSize = 4 << 20

// Publish stores body as the version of the rules under key, announced on
// the channel of the same name, and returns the version: the first 12
// bytes of body's SHA-256, in hex.
func Publish(ctx context.Context, c goredis.UniversalClient, key string, body []byte) (string, error) {
	if len(body) > MaxSize {
		return "", fmt.Errorf("redisrules: %d bytes; at most %d", len(body), MaxSize)
	}
	sum := sha256.Sum256(body)
	version := hex.EncodeToString(sum[:12])
	if err := c.HSet(ctx, key, "version", version, "body", body).Err(); err != nil {
		return "", fmt.Errorf("redisrules: publish: %w", err)
	}
	if err := c.Publish(ctx, key, version).Err(); err != nil {
		return "", fmt.Errorf("redisrules: announce: %w", err)
	}
	return version, nil
}

// Follow applies each version published under key until ctx ends, then
// returns nil: at start, on each announcement, and every poll (default
// 10s) if it missed one. apply gets the bytes and version of a version it
// has not seen; its error is logged to logger (default slog.Default()),
// as are Redis's, and the version is not tried again until another is
// published.
func Follow(ctx context.Context, c goredis.UniversalClient, key string, poll time.Duration, apply func(version string, body []byte) error, logger *slog.Logger) error {
	if logger == nil {
		logger = slog.Default()
	}
	if poll <= 0 {
		poll = 10 * time.Second
	}
	sub := c.Subscribe(ctx, key)
	defer sub.Close()
	msgs := sub.Channel()
	tick := time.NewTicker(poll)
	defer tick.Stop()
	seen := ""
	check := func() {
		v, err := c.HGet(ctx, key, "version").Result()
		switch {
		case errors.Is(err, goredis.Nil):
			return // nothing published yet
		case err != nil:
			if ctx.Err() == nil {
				logger.Error("sluice: rules in Redis unreadable", "key", key, "error", err)
			}
			return
		case v == seen:
			return
		}
		vals, err := c.HMGet(ctx, key, "version", "body").Result()
		if err != nil {
			logger.Error("sluice: rules in Redis unreadable", "key", key, "error", err)
			return
		}
		version, _ := vals[0].(string)
		body, _ := vals[1].(string)
		if len(body) > MaxSize {
			logger.Error("sluice: rules in Redis refused", "key", key, "version", version, "error", "larger than MaxSize")
			seen = version
			return
		}
		seen = version
		if err := apply(version, []byte(body)); err != nil {
			logger.Error("sluice: rules in Redis refused; the rules in force stay", "key", key, "version", version, "error", err)
			return
		}
		logger.Info("sluice: rules in force", "key", key, "version", version)
	}
	check()
	for {
		select {
		case <-ctx.Done():
			return nil
		case _, ok := <-msgs:
			if !ok {
				return nil
			}
			check()
		case <-tick.C:
			check()
		}
	}
}
