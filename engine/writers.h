/* Deliveries written to the hosts' TAPs, on the engine's thread or on writer
 * threads. A TAP write runs the receiving host's stack (and the ACKs and
 * sends it triggers) inside the writer's call, so writing from threads of
 * their own lets that work use another core while the model keeps time.
 * Each TAP has one writer (port % writers), which keeps its frames in order. */
#ifndef WRITERS_H
#define WRITERS_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "model.h"

#define LATE_BUCKETS 100000            /* 1 us each: 0..100 ms, then one overflow */

struct lateness {                      /* a delivery's write time against its model time */
    uint64_t n, sum_ns, max_ns, over, *bucket;
};
int lateness_init(struct lateness *l);
void lateness_add(struct lateness *l, ns_t late);
void lateness_clear(struct lateness *l);
void lateness_merge(struct lateness *into, const struct lateness *from);
uint64_t lateness_percentile_us(const struct lateness *l, double q);

/* A thread's duty cycle, second by second: a second in which it waited for
 * work less than 5 % of the time is a saturated one (its time ran late). */
struct duty {
    ns_t slot_start, idle_ns;
    uint64_t seconds, saturated;
};
void duty_idle(struct duty *d, ns_t from, ns_t to);
void duty_tick(struct duty *d, ns_t now);

struct sink {                          /* what one writing thread counts */
    struct lateness late;
    struct duty duty;
    uint64_t written, errors;
};

struct delivery { uint32_t pkt; int32_t fd; uint32_t len; ns_t t; };

struct writer {
    pthread_t thread;
    int efd;                           /* eventfd: wakes the writer when it sleeps */
    struct delivery *ring;             /* engine -> writer */
    uint32_t *freed;                   /* writer -> engine: packets written */
    uint32_t mask;
    _Atomic uint32_t head, tail, fhead, ftail;
    _Atomic int sleeping, stop;
    _Atomic uint32_t reset_gen;
    uint32_t seen_gen;
    const uint8_t *frames;             /* the engine's frame pool, FRAME_MAX apart */
    size_t frame_max;
    struct sink sink;
};

int writer_start(struct writer *w, uint32_t capacity, const uint8_t *frames, size_t frame_max);
void writer_push(struct writer *w, struct delivery d);
/* Hands every packet the writer has written back to `model`. */
void writer_reclaim(struct writer *w, struct model *m);
void writer_stop(struct writer *w);
/* One write on the calling thread, counted in `sink`. */
void write_frame(struct sink *sink, int fd, const uint8_t *frame, uint32_t len, ns_t t);
ns_t now_ns(void);
#endif
