package controlplane

import "runtime"

// launcher runs the code that starts the cluster's processes on one OS
// thread of its own, kept for the cluster's life.
//
// The kernel sends the parent-death signal when the *thread* that forked
// the child exits, not the process (golang/go#27505). Go ends a thread when
// a goroutine locked to it returns without unlocking, and any goroutine may
// lock the thread it happens to run on; a child forked from an ordinary
// goroutine could be killed while its parent runs on. A locked thread runs
// nothing but its goroutine, so no other code can end it early; and when
// the launcher returns, still locked, after Stop, the runtime ends the
// thread, which SIGKILLs any child that Stop could not stop.
type launcher struct {
	work chan func()
}

func newLauncher() *launcher {
	l := &launcher{work: make(chan func())}
	go func() {
		runtime.LockOSThread()
		for f := range l.work {
			f()
		}
	}()
	return l
}

// run calls f on the launcher's thread and waits for it.
func (l *launcher) run(f func()) {
	done := make(chan struct{})
	l.work <- func() {
		defer close(done)
		f()
	}
	<-done
}

// close ends the launcher and its thread.
func (l *launcher) close() { close(l.work) }
