//go:build integration

package podnetwork

import (
	"context"
	"io"
	"net"
	"path/filepath"
	"testing"
)

// BenchmarkPodToPodTCP measures one TCP stream's throughput from a pod to
// a pod on the other node, through both nodes' uplinks and the cluster
// network's userspace router, and to a pod on the same node, over the
// bridge alone, for comparison.
func BenchmarkPodToPodTCP(b *testing.B) {
	socket := filepath.Join(b.TempDir(), "cluster.sock")
	c, _ := startClusterNetwork(b, socket)
	node1, _ := startNode(b, 0, socket)
	node2, _ := startNode(b, 1, socket)
	awaitAttached(b, c, testNodes[0].IP, testNodes[1].IP)
	sender := testPod(b, node1, "10.244.0.10")
	sameNode := testPod(b, node1, "10.244.0.11")
	otherNode := testPod(b, node2, "10.244.16.10")
	b.Run("across nodes", func(b *testing.B) { streamThroughput(b, sender, otherNode) })
	b.Run("within a node", func(b *testing.B) { streamThroughput(b, sender, sameNode) })
}

// streamThroughput sends b.N chunks from one pod to a sink in the other
// over one connection, and waits for the sink to have them all.
func streamThroughput(b *testing.B, from, to *Pod) {
	ln, err := to.Namespace().Listen("tcp", net.JoinHostPort(to.IP().String(), "5001"))
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	received := make(chan int64, 1)
	go func() {
		conn, err := ln.Accept()
		if err != nil {
			received <- -1
			return
		}
		defer conn.Close()
		n, _ := io.Copy(io.Discard, conn)
		received <- n
	}()
	conn, err := from.Namespace().DialContext(context.Background(), "tcp", ln.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	chunk := make([]byte, 256<<10)
	b.SetBytes(int64(len(chunk)))
	var sent int64
	for b.Loop() {
		n, err := conn.Write(chunk)
		if err != nil {
			b.Fatal(err)
		}
		sent += int64(n)
	}
	conn.(*net.TCPConn).CloseWrite()
	if got := <-received; got != sent {
		b.Fatalf("the sink received %d bytes, want %d", got, sent)
	}
}
