package kvpub

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/radixkv/radixkv/events"
	"github.com/radixkv/radixkv/router"
)

// pythonWithZMQ returns a Python interpreter that has pyzmq (libzmq) and
// msgpack, or skips the test (CI installs python3-zmq and python3-msgpack).
func pythonWithZMQ(t *testing.T) string {
	for _, py := range []string{"/usr/bin/python3", "python3"} {
		if exec.Command(py, "-c", "import zmq, msgpack").Run() == nil {
			return py
		}
	}
	t.Skip("no python3 with pyzmq and msgpack (apt-get install python3-zmq python3-msgpack)")
	return ""
}

func freePort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// TestInteropLibzmqPublisher: a libzmq publisher laid out like vLLM's
// (PUB + replay ROUTER, array-shaped payloads) feeds our subscriber; the
// batches it sent before we connected arrive by replay.
func TestInteropLibzmqPublisher(t *testing.T) {
	py := pythonWithZMQ(t)
	pubPort, repPort := freePort(t), freePort(t)
	const n = 40
	cmd := exec.Command(py, "testdata/pyzmq_peer.py", "publisher", strconv.Itoa(pubPort), strconv.Itoa(repPort), strconv.Itoa(n))
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	line, err := bufio.NewReader(out).ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "ready\n", line)
	time.Sleep(100 * time.Millisecond) // let a few batches go out unseen

	r, _ := router.New(router.Config{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s, err := NewZMQSubscriber(ctx, r, ZMQSource{Worker: "vllm-0", Endpoint: fmt.Sprintf("tcp://127.0.0.1:%d", pubPort),
		ReplayEndpoint: fmt.Sprintf("tcp://127.0.0.1:%d", repPort), Topic: "kv", Dialect: events.VLLM})
	require.NoError(t, err)
	go func() { _ = s.Run(ctx) }()
	waitFor(t, "all batches", func() bool {
		next, _, _ := r.NextSeq("vllm-0")
		return next == n
	})
	require.Equal(t, 2*n, r.Stats().Blocks)
	st := s.Stats()
	require.Zero(t, st.Malformed)
	t.Logf("libzmq publisher: %d batches, %d received live, %d replayed", n, st.Received, st.Replayed)
}

// TestInteropLibzmqSubscriber: a libzmq SUB and DEALER read our publisher
// and its replay socket.
func TestInteropLibzmqSubscriber(t *testing.T) {
	py := pythonWithZMQ(t)
	p, err := NewZMQPublisher(ZMQConfig{Endpoint: "tcp://127.0.0.1:0", ReplayEndpoint: "tcp://127.0.0.1:0", Topic: "kv"})
	require.NoError(t, err)
	defer p.Close()
	const n = 5
	cmd := exec.Command(py, "testdata/pyzmq_peer.py", "subscriber", p.Endpoint(), p.ReplayEndpoint(), strconv.Itoa(n))
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	rd := bufio.NewReader(out)
	line, err := rd.ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "ready\n", line)
	got := make(chan string, 1)
	go func() {
		l, _ := rd.ReadString('\n')
		got <- l
	}()
	var res string
	for i := int64(0); res == ""; i++ {
		require.NoError(t, p.Publish(storedBatch(i+100)))
		select {
		case res = <-got:
		case <-time.After(20 * time.Millisecond):
		}
		require.Less(t, i, int64(2000), "libzmq subscriber got nothing")
	}
	var m struct {
		Live, Replayed []uint64
		First          []any
	}
	require.NoError(t, json.Unmarshal([]byte(res), &m), res)
	require.Len(t, m.Live, n)
	require.Equal(t, uint64(0), m.Replayed[0])
	require.GreaterOrEqual(t, len(m.Replayed), n)
	require.Len(t, m.First, 2) // [ts, events]: no rank set
	t.Logf("libzmq subscriber: live seqs %v, replayed %d from 0", m.Live, len(m.Replayed))
}
