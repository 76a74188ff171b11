/* A thread running an sd-event loop of its own (loopthread.h). */
#include "loopthread.h"

#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "log.h"
#include "macro.h"

struct loopthread {
        pthread_t thread;
        char name[16];
        int stop_fd;               /* eventfd: loopthread_stop asks the loop to exit */
        loopthread_setup_fn setup;
        loopthread_done_fn done;
        void *userdata;
        sem_t started;             /* posted once setup returned */
        int setup_result;
};

static int on_stop(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        return sd_event_exit(sd_event_source_get_event(s), 0);
}

static void *loopthread_main(void *userdata) {
        loopthread *t = userdata;
        sd_event *event = NULL;
        sd_event_source *stop = NULL;
        int r;

        (void) pthread_setname_np(pthread_self(), t->name);
        r = sd_event_new(&event);
        if (r >= 0)
                r = sd_event_add_io(event, &stop, t->stop_fd, EPOLLIN, on_stop, t);
        if (r >= 0)
                r = t->setup(event, t->userdata);
        t->setup_result = r;
        sem_post(&t->started);
        if (r >= 0) {
                r = sd_event_loop(event);
                if (r < 0)
                        log_error("%s: event loop failed: %s", t->name, strerror(-r));
                if (t->done)
                        t->done(t->userdata);
        }
        sd_event_source_unref(stop);
        sd_event_unref(event);
        return NULL;
}

int loopthread_start(const char *name, loopthread_setup_fn setup, loopthread_done_fn done, void *userdata,
                     loopthread **ret) {
        loopthread *t = calloc(1, sizeof(*t));
        int r;

        if (!t)
                return -ENOMEM;
        snprintf(t->name, sizeof(t->name), "%s", name);
        t->setup = setup;
        t->done = done;
        t->userdata = userdata;
        t->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (t->stop_fd < 0) {
                r = -errno;
                free(t);
                return r;
        }
        sem_init(&t->started, 0, 0);
        r = -pthread_create(&t->thread, NULL, loopthread_main, t);
        if (r < 0) {
                log_error("%s: cannot start its thread: %s", name, strerror(-r));
                goto fail;
        }
        while (sem_wait(&t->started) < 0 && errno == EINTR)
                ;
        if (t->setup_result < 0) {
                r = t->setup_result;
                pthread_join(t->thread, NULL);
                log_error("%s: cannot set up its loop: %s", name, strerror(-r));
                goto fail;
        }
        *ret = t;
        return 0;
fail:
        sem_destroy(&t->started);
        close(t->stop_fd);
        free(t);
        return r;
}

loopthread *loopthread_stop(loopthread *t) {
        uint64_t one = 1;

        if (!t)
                return NULL;
        if (write(t->stop_fd, &one, sizeof(one)) < 0)
                log_warning("%s: cannot ask its loop to stop: %s", t->name, strerror(errno));
        pthread_join(t->thread, NULL);
        sem_destroy(&t->started);
        close(t->stop_fd);
        free(t);
        return NULL;
}
