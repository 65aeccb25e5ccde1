// Command report turns the output of run.sh's rounds into the tables of
// benchmarks/README.md: medians across rounds, with each library's ratio to
// sluice.
//
//	go run ./report -dir results -readme README.md
//
// It reads, in dir, raw.txt (go test -bench output, every round), loads.txt
// (lines "round N before|after: <uptime>") and machine.txt (one fact a
// line). It writes dir/tables.md and, if -readme is set, replaces what lies
// between the README's "<!-- results:begin -->" and "<!-- results:end -->"
// lines with the same tables.
package main

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

func main() {
	dir := flag.String("dir", "results", "the directory holding raw.txt, loads.txt and machine.txt")
	readme := flag.String("readme", "", "a README whose results section to replace (none if empty)")
	flag.Parse()
	if err := run(*dir, *readme); err != nil {
		log.Fatal(err)
	}
}

func run(dir, readme string) error {
	raw, err := os.Open(filepath.Join(dir, "raw.txt"))
	if err != nil {
		return err
	}
	defer raw.Close()
	res, err := parse(raw)
	if err != nil {
		return fmt.Errorf("raw.txt: %w", err)
	}
	if len(res.names) == 0 {
		return errors.New("raw.txt: no benchmark results")
	}
	loads, err := readLoads(filepath.Join(dir, "loads.txt"))
	if err != nil {
		return err
	}
	machine, err := readLines(filepath.Join(dir, "machine.txt"))
	if err != nil {
		return err
	}
	tables := render(res, loads, machine)
	if err := os.WriteFile(filepath.Join(dir, "tables.md"), []byte(tables), 0o644); err != nil {
		return err
	}
	if readme == "" {
		return nil
	}
	text, err := os.ReadFile(readme)
	if err != nil {
		return err
	}
	updated, err := replaceSection(text, tables)
	if err != nil {
		return fmt.Errorf("%s: %w", readme, err)
	}
	return os.WriteFile(readme, updated, 0o644)
}

const (
	beginMarker = "<!-- results:begin -->"
	endMarker   = "<!-- results:end -->"
)

// replaceSection returns text with the lines between the markers replaced
// by section.
func replaceSection(text []byte, section string) ([]byte, error) {
	begin := bytes.Index(text, []byte(beginMarker))
	end := bytes.Index(text, []byte(endMarker))
	if begin < 0 || end < 0 || end < begin {
		return nil, fmt.Errorf("no %s … %s section", beginMarker, endMarker)
	}
	var out bytes.Buffer
	out.Write(text[:begin+len(beginMarker)])
	out.WriteString("\n")
	out.WriteString(section)
	out.Write(text[end:])
	return out.Bytes(), nil
}

// roundLoad is the load averages uptime printed around one round.
type roundLoad struct {
	round         int
	before, after string
}

// readLoads reads lines "round N before: <uptime>" and "round N after:
// <uptime>"; a missing file is no rounds.
func readLoads(path string) ([]roundLoad, error) {
	lines, err := readLines(path)
	if err != nil {
		return nil, err
	}
	var loads []roundLoad
	for _, l := range lines {
		var n int
		var when string
		if _, err := fmt.Sscanf(l, "round %d %s", &n, &when); err != nil {
			return nil, fmt.Errorf("%s: %q: %w", path, l, err)
		}
		_, avg, ok := strings.Cut(l, "load average:")
		if !ok {
			return nil, fmt.Errorf("%s: %q: no load average", path, l)
		}
		avg = strings.TrimSpace(avg)
		if len(loads) == 0 || loads[len(loads)-1].round != n {
			loads = append(loads, roundLoad{round: n})
		}
		switch when {
		case "before:":
			loads[len(loads)-1].before = avg
		case "after:":
			loads[len(loads)-1].after = avg
		default:
			return nil, fmt.Errorf("%s: %q: want before or after, got %s", path, l, strconv.Quote(when))
		}
	}
	return loads, nil
}

// readLines returns the non-empty lines of a file; a missing file has none.
func readLines(path string) ([]string, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return scanLines(f)
}

func scanLines(r io.Reader) ([]string, error) {
	var lines []string
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" {
			lines = append(lines, l)
		}
	}
	return lines, sc.Err()
}
