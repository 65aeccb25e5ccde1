// Command report turns the output of run.sh's runs into the tables of
// benchmarks/README.md: for every figure, the median over runs of each
// run's median over its rounds, with the range across runs.
//
//	go run ./report -dir results -readme README.md
//
// Each run is a directory dir/run-K holding raw.txt (go test -bench output
// of every round, each started by a line "# round N"), loads.txt (lines
// "round N before|after: <uptime>") and machine.txt (lines "key: value").
// A dir without run-K directories is one run of the older layout, its
// files in dir itself. It writes dir/tables.md and, if -readme is set,
// replaces what lies between the README's "<!-- results:begin -->" and
// "<!-- results:end -->" lines with the same tables.
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
	"slices"
	"strconv"
	"strings"
)

func main() {
	dir := flag.String("dir", "results", "the directory holding the runs, run-1, run-2, …")
	readme := flag.String("readme", "", "a README whose results section to replace (none if empty)")
	flag.Parse()
	if err := run(*dir, *readme); err != nil {
		log.Fatal(err)
	}
}

func run(dir, readme string) error {
	rs, skipped, err := loadRuns(dir)
	if err != nil {
		return err
	}
	tables := render(rs, skipped)
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

// loadRuns reads the runs of dir, in the order of their numbers, and says
// which run directories it left out for want of results.
func loadRuns(dir string) (runs, []string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil, err
	}
	type numbered struct {
		n    int
		name string
	}
	var found []numbered
	for _, e := range entries {
		n, ok := strings.CutPrefix(e.Name(), "run-")
		if !e.IsDir() || !ok {
			continue
		}
		k, err := strconv.Atoi(n)
		if err != nil {
			continue
		}
		found = append(found, numbered{k, e.Name()})
	}
	slices.SortFunc(found, func(a, b numbered) int { return a.n - b.n })
	if len(found) == 0 { // the older layout: one run, in dir itself
		r, err := loadRun(dir, "run-1")
		if err != nil {
			return nil, nil, err
		}
		if len(r.res.names) == 0 {
			return nil, nil, errors.New(filepath.Join(dir, "raw.txt") + ": no benchmark results")
		}
		return runs{r}, nil, nil
	}
	var rs runs
	var skipped []string
	for _, f := range found {
		r, err := loadRun(filepath.Join(dir, f.name), f.name)
		if errors.Is(err, os.ErrNotExist) {
			skipped = append(skipped, f.name+", which has no raw.txt")
			continue
		}
		if err != nil {
			return nil, nil, err
		}
		if len(r.res.names) == 0 {
			skipped = append(skipped, f.name+", which has no benchmark results")
			continue
		}
		rs = append(rs, r)
	}
	if len(rs) == 0 {
		return nil, nil, fmt.Errorf("%s: no run has benchmark results", dir)
	}
	return rs, skipped, nil
}

// loadRun reads one run's raw.txt, loads.txt and machine.txt; the last
// two may be missing.
func loadRun(dir, label string) (*fullRun, error) {
	raw, err := os.Open(filepath.Join(dir, "raw.txt"))
	if err != nil {
		return nil, err
	}
	defer raw.Close()
	res, err := parse(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", raw.Name(), err)
	}
	loads, err := readLoads(filepath.Join(dir, "loads.txt"))
	if err != nil {
		return nil, err
	}
	machine, err := readLines(filepath.Join(dir, "machine.txt"))
	if err != nil {
		return nil, err
	}
	return &fullRun{label: label, res: res, loads: loads, machine: machine}, nil
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
