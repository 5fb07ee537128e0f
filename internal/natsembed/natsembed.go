// Package natsembed runs an in-process nats-server with JetStream for
// tests and the cluster simulation: loopback only, a random port, its
// store in a directory the caller owns, no signal handlers, no logging.
package natsembed

import (
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// Server is a running embedded server.
type Server struct {
	s    *server.Server
	dir  string
	port int
}

// Start starts a server storing JetStream data under dir (which must
// exist) on 127.0.0.1 and a free port.
func Start(dir string) (*Server, error) {
	if dir == "" {
		return nil, errors.New("natsembed: empty store directory")
	}
	return start(dir, -1)
}

func start(dir string, port int) (*Server, error) {
	opts := &server.Options{
		Host:      "127.0.0.1",
		Port:      port,
		JetStream: true,
		StoreDir:  dir,
		NoSigs:    true,
		NoLog:     true,
		// No cluster, gateway, leaf or monitoring listeners.
		HTTPPort: 0,
	}
	s, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("natsembed: %w", err)
	}
	s.Start()
	if !s.ReadyForConnections(15 * time.Second) {
		s.Shutdown()
		return nil, errors.New("natsembed: server not ready after 15s")
	}
	addr, ok := s.Addr().(*net.TCPAddr)
	if !ok {
		s.Shutdown()
		return nil, errors.New("natsembed: server has no TCP address")
	}
	return &Server{s: s, dir: dir, port: addr.Port}, nil
}

// URL returns the client URL (nats://127.0.0.1:port).
func (s *Server) URL() string { return fmt.Sprintf("nats://127.0.0.1:%d", s.port) }

// Stop shuts the server down and waits for it.
func (s *Server) Stop() {
	s.s.Shutdown()
	s.s.WaitForShutdown()
}

// Restart stops the server and starts a new one on the same port and
// store, as an operator restarting nats-server would; clients reconnect.
func (s *Server) Restart() error {
	s.Stop()
	var err error
	for try := 0; try < 50; try++ {
		var n *Server
		if n, err = start(s.dir, s.port); err == nil {
			s.s = n.s
			return nil
		}
		time.Sleep(100 * time.Millisecond) // the port may linger briefly
	}
	return err
}
