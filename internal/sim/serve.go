package sim

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"time"
)

// ServeOptions are the process-level settings of Serve.
type ServeOptions struct {
	// Log receives the one-line "listening" notice and lifecycle messages.
	Log io.Writer
	// Exit ends the process for Config.ExitAfter; nil means os.Exit.
	Exit func(code int)
	// Listening, if set, is called with the bound address once listening.
	Listening func(addr net.Addr)
}

// Serve listens on addr and serves cfg until ctx is cancelled, then aborts
// in-flight streams and returns within about a second.
func Serve(ctx context.Context, cfg Config, addr string, opt ServeOptions) error {
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("sim: %w", err)
	}
	if cfg.ListenAfter > 0 {
		// Not listening yet, as an engine loading its model before it
		// opens its port: connection refused until then.
		select {
		case <-time.After(cfg.ListenAfter):
		case <-ctx.Done():
			return nil
		}
		// The load is timed from the start, not from the listen.
		cfg.LoadTime = max(cfg.LoadTime-cfg.ListenAfter, 0)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("sim: listen: %w", err)
	}
	return ServeListener(ctx, cfg, ln, opt)
}

// ServeListener is Serve on an existing listener, which it closes.
func ServeListener(ctx context.Context, cfg Config, ln net.Listener, opt ServeOptions) error {
	if err := cfg.Validate(); err != nil {
		ln.Close()
		return fmt.Errorf("sim: %w", err)
	}
	logw := opt.Log
	if logw == nil {
		logw = io.Discard
	}
	sim := New(cfg)
	defer sim.Close()
	// Aborted streams (faults, shutdown) use http.ErrAbortHandler, which
	// net/http does not log; anything else it logs is worth seeing.
	srv := &http.Server{Handler: sim, ReadHeaderTimeout: 30 * time.Second, ConnContext: withConn}
	ln = arrivalListener{ln}
	as := ""
	if p := normPersona(cfg.Personality); p != PersonaGeneric {
		as = ", as " + p
	}
	fmt.Fprintf(logw, "sim: listening on %s (model %s, mode %s%s)\n", ln.Addr(), strings.Join(cfg.Models, ","), cfg.Mode, as)
	if opt.Listening != nil {
		opt.Listening(ln.Addr())
	}
	if cfg.ExitAfter > 0 {
		exit := opt.Exit
		if exit == nil {
			exit = os.Exit
		}
		t := time.AfterFunc(cfg.ExitAfter, func() {
			fmt.Fprintf(logw, "sim: exiting with code %d after %s (--exit-after)\n", cfg.ExitCode, cfg.ExitAfter)
			exit(cfg.ExitCode)
		})
		defer t.Stop()
	}

	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("sim: serve: %w", err)
	case <-ctx.Done():
	}
	// Abort streams first: Shutdown waits for active connections, and a
	// stream would otherwise keep it waiting until its last token.
	sim.Close()
	sctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		srv.Close()
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("sim: serve: %w", err)
	}
	fmt.Fprintln(logw, "sim: stopped")
	return nil
}
