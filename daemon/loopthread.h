/* A thread with an sd-event loop of its own: how profd's long-lived
 * background stages (the unwinder, the exporter) run, beside the work
 * queue's threads (the writer, the query workers). The owner's sources
 * (an eventfd its requests arrive on, timers for work that is due) are
 * added on the thread by setup, and the thread runs the loop until
 * loopthread_stop. sd-event objects are not thread-safe: only the
 * thread's own callbacks touch its loop and sources; other threads reach
 * it through the owner's eventfd. */
#pragma once

#include <systemd/sd-event.h>

typedef struct loopthread loopthread;

/* Runs on the new thread before its loop: adds the owner's sources to
 * event. A negative errno ends the thread, and loopthread_start returns it. */
typedef int (*loopthread_setup_fn)(sd_event *event, void *userdata);
/* Runs on the thread after its loop ended, before the loop is freed:
 * drops the owner's sources. May be NULL. */
typedef void (*loopthread_done_fn)(void *userdata);

/* Starts thread name (at most 15 characters) and waits until setup has
 * returned. Returns 0 or a negative errno (logged). */
int loopthread_start(const char *name, loopthread_setup_fn setup, loopthread_done_fn done, void *userdata,
                     loopthread **ret);
/* Any thread but its own: makes the loop exit after the callback it runs,
 * joins the thread and frees it. NULL is fine. */
loopthread *loopthread_stop(loopthread *t);
