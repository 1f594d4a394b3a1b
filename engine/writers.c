/* Writer threads (writers.h). Two single-producer single-consumer rings per
 * writer: deliveries in, written packets back. The writer sleeps on an
 * eventfd when its ring is empty: it says so first (`sleeping`), then looks
 * once more, so a delivery pushed meanwhile is never left unseen. */
#define _GNU_SOURCE
#include "writers.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

ns_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (ns_t)ts.tv_sec * 1000000000u + (ns_t)ts.tv_nsec;
}

int lateness_init(struct lateness *l)
{
    memset(l, 0, sizeof *l);
    l->bucket = calloc(LATE_BUCKETS, sizeof *l->bucket);
    return l->bucket ? 0 : -1;
}

void lateness_add(struct lateness *l, ns_t late)
{
    l->n++;
    l->sum_ns += late;
    if (late > l->max_ns)
        l->max_ns = late;
    if (late / 1000 < LATE_BUCKETS)
        l->bucket[late / 1000]++;
    else
        l->over++;
}

void lateness_clear(struct lateness *l)
{
    uint64_t *b = l->bucket;
    memset(b, 0, LATE_BUCKETS * sizeof *b);
    memset(l, 0, sizeof *l);
    l->bucket = b;
}

void lateness_merge(struct lateness *into, const struct lateness *from)
{
    into->n += from->n;
    into->sum_ns += from->sum_ns;
    into->over += from->over;
    if (from->max_ns > into->max_ns)
        into->max_ns = from->max_ns;
    for (uint32_t i = 0; i < LATE_BUCKETS; i++)
        into->bucket[i] += from->bucket[i];
}

uint64_t lateness_percentile_us(const struct lateness *l, double q)
{
    uint64_t want = (uint64_t)(q * (double)l->n), seen = 0;
    for (uint64_t i = 0; i < LATE_BUCKETS; i++) {
        seen += l->bucket[i];
        if (seen > want)
            return i;
    }
    return LATE_BUCKETS;
}

#define DUTY_SLOT_NS 1000000000ull
#define SATURATED_IDLE_SHARE 20        /* idle under 1/20 of a second: saturated */

void duty_tick(struct duty *d, ns_t now)
{
    if (!d->slot_start) {
        d->slot_start = now;
        return;
    }
    if (now - d->slot_start < DUTY_SLOT_NS)
        return;
    d->seconds++;
    if (d->idle_ns * SATURATED_IDLE_SHARE < now - d->slot_start)
        d->saturated++;
    d->slot_start = now;
    d->idle_ns = 0;
}

void duty_idle(struct duty *d, ns_t from, ns_t to)
{
    d->idle_ns += to - from;
}

void write_frame(struct sink *sink, int fd, const uint8_t *frame, uint32_t len, ns_t t)
{
    ssize_t n = write(fd, frame, len);
    if (n == (ssize_t)len)
        sink->written++;
    else
        sink->errors++;
    ns_t now = now_ns();
    lateness_add(&sink->late, now > t ? now - t : 0);
}

static void *writer_main(void *arg)
{
    struct writer *w = arg;
    for (;;) {
        uint32_t gen = atomic_load_explicit(&w->reset_gen, memory_order_acquire);
        if (gen != w->seen_gen) {
            lateness_clear(&w->sink.late);
            memset(&w->sink.duty, 0, sizeof w->sink.duty);
            w->seen_gen = gen;
        }
        duty_tick(&w->sink.duty, now_ns());
        uint32_t head = atomic_load_explicit(&w->head, memory_order_relaxed);
        uint32_t tail = atomic_load_explicit(&w->tail, memory_order_acquire);
        if (head != tail) {
            struct delivery d = w->ring[head & w->mask];
            write_frame(&w->sink, d.fd, w->frames + (size_t)d.pkt * w->frame_max, d.len, d.t);
            atomic_store_explicit(&w->head, head + 1, memory_order_release);
            uint32_t ft = atomic_load_explicit(&w->ftail, memory_order_relaxed);
            w->freed[ft & w->mask] = d.pkt;
            atomic_store_explicit(&w->ftail, ft + 1, memory_order_release);
            continue;
        }
        if (atomic_load(&w->stop))
            return NULL;
        atomic_store(&w->sleeping, 1);
        if (atomic_load(&w->tail) != head || atomic_load(&w->stop)) {
            atomic_store(&w->sleeping, 0);
            continue;
        }
        uint64_t v;
        ns_t slept = now_ns();
        if (read(w->efd, &v, sizeof v) < 0 && errno != EINTR && errno != EAGAIN)
            return NULL;
        duty_idle(&w->sink.duty, slept, now_ns());
        atomic_store(&w->sleeping, 0);
    }
}

int writer_start(struct writer *w, uint32_t capacity, const uint8_t *frames, size_t frame_max)
{
    uint32_t size = 1;
    while (size < capacity)
        size <<= 1;
    memset(w, 0, sizeof *w);
    w->mask = size - 1;
    w->frames = frames;
    w->frame_max = frame_max;
    w->ring = calloc(size, sizeof *w->ring);
    w->freed = calloc(size, sizeof *w->freed);
    w->efd = eventfd(0, EFD_CLOEXEC);
    if (!w->ring || !w->freed || w->efd < 0 || lateness_init(&w->sink.late))
        return -1;
    return pthread_create(&w->thread, NULL, writer_main, w) ? -1 : 0;
}

void writer_push(struct writer *w, struct delivery d)
{
    uint32_t tail = atomic_load_explicit(&w->tail, memory_order_relaxed);
    w->ring[tail & w->mask] = d;
    atomic_store(&w->tail, tail + 1);
    if (atomic_load(&w->sleeping)) {
        uint64_t one = 1;
        if (write(w->efd, &one, sizeof one) < 0) { /* the counter is full: it is awake already */ }
    }
}

void writer_reclaim(struct writer *w, struct model *m)
{
    uint32_t fh = atomic_load_explicit(&w->fhead, memory_order_relaxed);
    uint32_t ft = atomic_load_explicit(&w->ftail, memory_order_acquire);
    for (; fh != ft; fh++)
        model_free(m, w->freed[fh & w->mask]);
    atomic_store_explicit(&w->fhead, fh, memory_order_release);
}

void writer_stop(struct writer *w)
{
    atomic_store(&w->stop, 1);
    uint64_t one = 1;
    if (write(w->efd, &one, sizeof one) < 0) { /* awake already */ }
    pthread_join(w->thread, NULL);
}
