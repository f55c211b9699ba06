// A wall clock that a test can move, preloaded into one real handoffd (WallClock.swift).
//
// Why not libfaketime: it also rewrites timerfd_settime, and libdispatch arms the timers behind
// every Swift Task.sleep that way, so with the clock set back every sleep fired late, and set
// forward a thread spun; a real clock step (NTP, a user) moves the wall clock only. This shifts
// CLOCK_REALTIME(_COARSE) in clock_gettime, gettimeofday and time by the seconds written in
// $HANDOFF_CLOCK_OFFSET_FILE (re-read at most every 50 ms of monotonic time), and nothing else.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/time.h>
#include <time.h>

static int (*real_clock_gettime)(clockid_t, struct timespec *);

static long offset_seconds(void) {
    static long cached;
    static long long read_at_ms = -1000;
    struct timespec now;
    if (!real_clock_gettime) real_clock_gettime = dlsym(RTLD_NEXT, "clock_gettime");
    real_clock_gettime(CLOCK_MONOTONIC, &now);
    long long ms = (long long)now.tv_sec * 1000 + now.tv_nsec / 1000000;
    if (ms - read_at_ms >= 50) {
        read_at_ms = ms;
        const char *path = getenv("HANDOFF_CLOCK_OFFSET_FILE");
        FILE *f = path ? fopen(path, "r") : NULL;
        long value = 0;
        if (f) {
            if (fscanf(f, "%ld", &value) == 1) cached = value;
            fclose(f);
        }
    }
    return cached;
}

int clock_gettime(clockid_t id, struct timespec *ts) {
    if (!real_clock_gettime) real_clock_gettime = dlsym(RTLD_NEXT, "clock_gettime");
    int rc = real_clock_gettime(id, ts);
    if (rc == 0 && (id == CLOCK_REALTIME || id == CLOCK_REALTIME_COARSE)) ts->tv_sec += offset_seconds();
    return rc;
}

int gettimeofday(struct timeval *tv, void *tz) {
    struct timespec ts;
    int rc = clock_gettime(CLOCK_REALTIME, &ts);
    if (rc == 0 && tv) {
        tv->tv_sec = ts.tv_sec;
        tv->tv_usec = ts.tv_nsec / 1000;
    }
    (void)tz;
    return rc;
}

time_t time(time_t *t) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    if (t) *t = ts.tv_sec;
    return ts.tv_sec;
}
