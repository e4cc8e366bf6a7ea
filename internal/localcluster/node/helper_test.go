//go:build integration

package node

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"os"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// helperEnv names the helper a pod runs when its command is this test
// binary: programs the tests need inside sandboxes.
const helperEnv = "NODE_TEST_HELPER"

func runHelper(name string, args []string) int {
	if code, ok := runNetworkHelper(name, args); ok {
		return code
	}
	if code, ok := runServiceHelper(name, args); ok {
		return code
	}
	switch name {
	case "serve":
		l, err := net.Listen("tcp", args[0])
		if err != nil {
			fmt.Println("listen error:", err)
			return 1
		}
		fmt.Println("listening on", l.Addr())
		for {
			c, err := l.Accept()
			if err != nil {
				return 1
			}
			fmt.Fprintf(c, "hello from %s\n", os.Getenv("HOSTNAME"))
			c.Close()
		}
	case "serve-after":
		// Listens on args[1] once the FIFO args[0] is opened for writing.
		f, err := os.Open(args[0])
		if err != nil {
			fmt.Println("open error:", err)
			return 1
		}
		f.Close()
		return runHelper("serve", args[1:])
	case "http-ready":
		// Answers /ready with 200 while the file args[0] exists, else 503.
		http.HandleFunc("/ready", func(w http.ResponseWriter, _ *http.Request) {
			if _, err := os.Stat(args[0]); err != nil {
				w.WriteHeader(http.StatusServiceUnavailable)
			}
		})
		fmt.Println(http.ListenAndServe(args[1], nil))
		return 1
	case "dial":
		deadline := time.Now().Add(20 * time.Second)
		for {
			c, err := net.DialTimeout("tcp", args[0], time.Second)
			if err == nil {
				line, _ := bufio.NewReader(c).ReadString('\n')
				fmt.Print("got: ", line)
				return 0
			}
			if time.Now().After(deadline) {
				fmt.Println("dial error:", err)
				return 1
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	fmt.Println("unknown helper", name)
	return 2
}

// runNetworkHelper runs the helpers that try the pod's network once; false
// when name is none of them.
func runNetworkHelper(name string, args []string) (int, bool) {
	switch name {
	case "connect", "must-connect":
		// One attempt: "connected" or the error, which fails must-connect.
		c, err := net.DialTimeout("tcp", args[0], 10*time.Second)
		if err != nil {
			fmt.Println("error:", err)
			if name == "must-connect" {
				return 1, true
			}
			return 0, true
		}
		c.Close()
		fmt.Println("connected")
		return 0, true
	case "bind":
		// Binds args[0]: "bound" or the error.
		l, err := net.Listen("tcp", args[0])
		if err != nil {
			fmt.Println("error:", err)
			return 0, true
		}
		l.Close()
		fmt.Println("bound")
		return 0, true
	}
	return 0, false
}

// helperContainer runs a helper of this test binary in a pod.
func helperContainer(t *testing.T, name, helper string, args ...string) corev1.Container {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return corev1.Container{
		Name:    name,
		Image:   "paddlejob.test/helper",
		Command: append([]string{self}, args...),
		Env:     []corev1.EnvVar{{Name: helperEnv, Value: helper}},
	}
}
