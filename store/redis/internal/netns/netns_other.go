//go:build !linux

// Package netns builds small networks of Linux network namespaces for
// fault tests. Elsewhere than on Linux it makes none: Available says so.
package netns

import (
	"context"
	"errors"
	"net"
	"os/exec"
)

var errUnsupported = errors.New("network namespaces are Linux's")

// Net is a network of namespaces; none here.
type Net struct{}

// NS is a member of a Net; none here.
type NS struct {
	Name, IP string
}

func Available() error                             { return errUnsupported }
func New() (*Net, error)                           { return nil, errUnsupported }
func (n *Net) Add(string) (*NS, error)             { return nil, errUnsupported }
func (n *Net) Close() error                        { return nil }
func (n *Net) Cut(*NS) error                       { return errUnsupported }
func (n *Net) Mend(*NS) error                      { return errUnsupported }
func (ns *NS) Command(string, ...string) *exec.Cmd { return exec.Command("false") }
func (ns *NS) CommandContext(context.Context, string, ...string) *exec.Cmd {
	return exec.Command("false")
}
func (ns *NS) Dial(context.Context, string, string) (net.Conn, error) {
	return nil, errUnsupported
}
func (ns *NS) Listen(string, string) (net.Listener, error) { return nil, errUnsupported }
func (ns *NS) Nft(string) error                            { return errUnsupported }
func (ns *NS) Run(string, ...string) error                 { return errUnsupported }
func Probe(string, ...string) error                        { return errUnsupported }
func ProbeNft(string) error                                { return errUnsupported }
func Sweep() (int, error)                                  { return 0, nil }
