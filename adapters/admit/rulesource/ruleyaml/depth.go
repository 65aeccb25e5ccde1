package ruleyaml

import "github.com/sluice-go/sluice/adapters/admit/rulefile"

// tooDeep scans data as YAML's structure shows in its bytes: flow
// collections by their brackets (outside quotes and comments), block ones
// by indentation and "- " indicators. It reports ok false, and the line,
// where the nesting passes rulefile.MaxDepth; it may count a level too
// many in odd spellings, never one too few. It takes time linear in data.
func tooDeep(data []byte) (line int, ok bool) {
	const max = rulefile.MaxDepth
	var (
		indents []int // the block levels' columns
		flow    int
		quote   byte
	)
	line = 1
	for i := 0; i < len(data); {
		// The start of a line: its indentation, and "- " indicators.
		if flow == 0 && quote == 0 {
			col := 0
			for i < len(data) && data[i] == ' ' {
				i, col = i+1, col+1
			}
			if i < len(data) && data[i] != '\n' && data[i] != '#' && data[i] != '\r' {
				for len(indents) > 0 && indents[len(indents)-1] >= col {
					indents = indents[:len(indents)-1]
				}
				indents = append(indents, col)
				for i+1 < len(data) && data[i] == '-' && (data[i+1] == ' ' || data[i+1] == '\n') {
					i, col = i+2, col+2
					for i < len(data) && data[i] == ' ' {
						i, col = i+1, col+1
					}
					indents = append(indents, col)
				}
				if len(indents) > max {
					return line, false
				}
			}
		}
		// The rest of the line.
		for ; i < len(data) && data[i] != '\n'; i++ {
			c := data[i]
			switch {
			case quote != 0:
				if c == quote {
					quote = 0
				} else if c == '\\' && quote == '"' {
					i++
				}
			case c == '"' || c == '\'':
				quote = c
			case c == '#' && (i == 0 || data[i-1] == ' ' || data[i-1] == '\t'):
				for i < len(data) && data[i] != '\n' {
					i++
				}
				i--
			case c == '[' || c == '{':
				if flow++; flow+len(indents) > max {
					return line, false
				}
			case c == ']' || c == '}':
				if flow > 0 {
					flow--
				}
			}
		}
		i++
		line++
	}
	return line, true
}
