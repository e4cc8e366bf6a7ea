package dashboard

import (
	"bytes"
	"encoding/json"
	"net/http"
	"time"
)

// Live pages are server-sent events (text/event-stream): one HTTP response
// per page that the server writes to as things change, which the browser's
// EventSource reads and reopens by itself after a dropped connection (the
// server then sends the whole state again). One direction is all the pages
// need, and it passes any proxy that passes HTTP.

// heartbeat is how often an idle stream gets a comment, so a browser gone
// without closing its connection is noticed by a failed write.
const heartbeat = 15 * time.Second

// writeTimeout bounds one write to a browser: one that reads nothing for
// that long is disconnected and reconnects afresh.
const writeTimeout = 30 * time.Second

// sseStream writes server-sent events to one browser.
type sseStream struct {
	w  http.ResponseWriter
	rc *http.ResponseController
}

func startSSE(w http.ResponseWriter) (*sseStream, error) {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	s := &sseStream{w: w, rc: http.NewResponseController(w)}
	// The browser waits this long before reconnecting.
	return s, s.write([]byte("retry: 2000\n\n"))
}

// frame encodes one event; data is JSON, so it holds no newline.
func frame(event string, v any) ([]byte, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return rawFrame(event, data), nil
}

func rawFrame(event string, data []byte) []byte {
	var b bytes.Buffer
	b.Grow(len(event) + len(data) + 16)
	b.WriteString("event: ")
	b.WriteString(event)
	b.WriteString("\ndata: ")
	b.Write(data)
	b.WriteString("\n\n")
	return b.Bytes()
}

// send writes one event.
func (s *sseStream) send(event string, v any) error {
	f, err := frame(event, v)
	if err != nil {
		return err
	}
	return s.write(f)
}

func (s *sseStream) ping() error { return s.write([]byte(": ping\n\n")) }

func (s *sseStream) write(b []byte) error {
	_ = s.rc.SetWriteDeadline(time.Now().Add(writeTimeout))
	if _, err := s.w.Write(b); err != nil {
		return err
	}
	return s.rc.Flush()
}

// Problem is an event telling the page something it shows cannot be read,
// e.g. the user may not list the jobs of a namespace.
type Problem struct {
	Message string `json:"message"`
}
