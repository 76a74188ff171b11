/* The thread with an sd-event loop of its own: setup runs on the thread
 * before start returns, the owner's eventfd and timers fire there, a
 * failed setup is returned, and stop joins. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "loopthread.h"
#include "tests.h"

struct owner {
        int fd;
        sd_event_source *io, *timer;
        pthread_t setup_thread, io_thread;
        atomic_int kicks, ticks, done;
        int fail_with;
};

static int on_kick(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        struct owner *o = userdata;
        uint64_t n;

        if (read(fd, &n, sizeof(n)) == sizeof(n))
                o->kicks += (int) n;
        o->io_thread = pthread_self();
        return 0;
}

static int on_tick(sd_event_source *s, uint64_t usec, void *userdata) {
        struct owner *o = userdata;

        o->ticks++;
        /* due again 1 ms later: a due-time hook */
        sd_event_source_set_time(s, usec + 1000);
        return sd_event_source_set_enabled(s, SD_EVENT_ONESHOT);
}

static int setup(sd_event *event, void *userdata) {
        struct owner *o = userdata;
        int r;

        o->setup_thread = pthread_self();
        if (o->fail_with)
                return o->fail_with;
        r = sd_event_add_io(event, &o->io, o->fd, EPOLLIN, on_kick, o);
        if (r < 0)
                return r;
        return sd_event_add_time_relative(event, &o->timer, CLOCK_MONOTONIC, 1000, 0, on_tick, o);
}

static void done(void *userdata) {
        struct owner *o = userdata;

        o->io = sd_event_source_unref(o->io);
        o->timer = sd_event_source_unref(o->timer);
        o->done++;
}

static void test_runs_and_stops(void) {
        struct owner o = { .fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK) };
        loopthread *t = NULL;
        uint64_t one = 1;

        CHECK_INT_EQ(loopthread_start("test-loop", setup, done, &o, &t), 0);
        CHECK(t != NULL);
        CHECK(!pthread_equal(o.setup_thread, pthread_self()));
        for (int i = 0; i < 3; i++)
                CHECK(write(o.fd, &one, sizeof(one)) == sizeof(one));
        for (int i = 0; i < 2000 && (o.kicks < 3 || o.ticks < 3); i++)
                usleep(1000);
        CHECK_INT_EQ(o.kicks, 3);
        CHECK(o.ticks >= 3);
        CHECK(pthread_equal(o.io_thread, o.setup_thread));
        CHECK(loopthread_stop(t) == NULL);
        CHECK_INT_EQ(o.done, 1);
        CHECK(o.io == NULL && o.timer == NULL);
        close(o.fd);
}

static void test_setup_failure(void) {
        struct owner o = { .fd = -1, .fail_with = -EMFILE };
        loopthread *t = NULL;

        CHECK_INT_EQ(loopthread_start("test-fail", setup, done, &o, &t), -EMFILE);
        CHECK(t == NULL);
        CHECK_INT_EQ(o.done, 0);
        CHECK(loopthread_stop(NULL) == NULL);
}

int main(void) {
        test_runs_and_stops();
        test_setup_failure();
        TESTS_DONE();
}
