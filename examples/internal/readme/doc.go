// Package readme holds the module's README.md to what it shows: its test
// compiles every Go block of README.md and fails on a Markdown table whose
// rows do not have the header's number of cells.
//
// The rules a Go block follows, so that it compiles as shown:
//
//   - A block that starts with a package clause is a whole file, compiled
//     as its own package.
//
//   - Any other block is a fragment. Its leading import declarations, if
//     any, are the file's. If the rest parses as declarations (funcs, vars,
//     types), they are the file's too; otherwise the rest is the body of a
//     function. Either way, every package the fragment names and does not
//     import is imported by its usual name: core, httplimit, sluicehttp,
//     sluicegin, sluiceecho, sluicefiber, memory, redisstore, goredis, gin,
//     echo (v4), echov5, fiber (v2), fiberv3, http, time, log, slog and the
//     like (see knownImports in the test).
//
//   - What a fragment uses but does not declare (the handler it wraps, the
//     router it installs on) is declared in an HTML comment right above
//     the block, which Markdown does not show:
//
//     <!-- go: var h http.Handler; var r *gin.Engine -->
//
// A fragment is compiled as written: a variable it declares and never uses,
// or a name it uses and nobody declares, fails the test, as it would fail a
// reader who pasted it.
//
// go test ./examples/internal/readme checks README.md; -args -readme=PATH
// checks another file (a draft, say).
package readme
