/* fabric-engine: the modelled fabric's process. It holds a TAP per host
 * interface (created in the host's network namespace), reads every frame the
 * hosts send, runs it through the model (model.c) and writes it to its
 * destination's TAP when the model says it arrives.
 *
 *   fabric-engine [--writers N] [--slack-us N] [--spin-us N] SPEC CONTROL_SOCKET STATS_FILE
 *
 * One loop: the model's events due by now, then epoll until the next event
 * is due (epoll_pwait2; the timer's slack --slack-us, 1 ns by default; with
 * --spin-us it polls instead of sleeping when the next event is that close).
 * Deliveries are written on this thread, or with --writers N on N threads of
 * their own (writers.h says why). --noise-us X makes every delivery up to X
 * us later, in order (a test of how much lateness the results bear); --boost N
 * runs it at nice -N, ahead of the hosts' processes; --cpu N keeps its loop on
 * CPU N-1 (the fabric then steers the hosts' receive work to the others). "ready" on
 * stdout once every TAP exists and the control socket listens. The control
 * socket (mode 0600) takes one command a line and answers one line:
 *   counters                 JSON: every port's counters, lateness, taps, CPU
 *   rate NODE PORT BPS       a port's rate from its next packet on
 *   reset                    lateness and tap counters from zero (a run starts)
 * SIGTERM, SIGINT or SIGHUP: the counters to STATS_FILE, then exit (the TAPs
 * go with their file descriptors). */
#define _GNU_SOURCE
#include "model.h"
#include "spec.h"
#include "writers.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/if.h>
#include <linux/if_tun.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define FRAME_MAX 1536
#define MAX_CLIENTS 8
#define MAX_WRITERS 8
#define DRAIN_SLICE 16                 /* frames read from one TAP between the model's due events */
#define TAG_TAP 0u
#define TAG_LISTEN 1u
#define TAG_SIGNAL 2u
#define TAG_CLIENT 3u

struct client { int fd; size_t len; char buf[256]; };

struct engine {
    struct model m;
    struct spec s;
    int *tap_fd;                        /* per port: its TAP, or -1 */
    uint8_t *frames;                    /* per packet of the pool: its frame */
    struct sink sink;                   /* this thread's writes */
    struct writer writers[MAX_WRITERS];
    uint32_t nwriters;
    uint64_t tap_read, not_ipv4, oversize;
    ns_t spin_ns, slack_ns;
    struct client clients[MAX_CLIENTS];
    int epfd;
};

static void die(const char *what)
{
    fprintf(stderr, "fabric-engine: %s: %s\n", what, strerror(errno));
    exit(1);
}

/* A TAP named `ifname` in the namespace of process `pid`, non-blocking. */
static int open_tap(int pid, const char *ifname, int home_ns)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/ns/net", pid);
    int ns = open(path, O_RDONLY | O_CLOEXEC);
    if (ns < 0 || setns(ns, CLONE_NEWNET))
        die(path);
    close(ns);
    int fd = open("/dev/net/tun", O_RDWR | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        die("/dev/net/tun");
    struct ifreq ifr;
    memset(&ifr, 0, sizeof ifr);
    ifr.ifr_flags = IFF_TAP | IFF_NO_PI;
    snprintf(ifr.ifr_name, IFNAMSIZ, "%s", ifname);
    if (ioctl(fd, TUNSETIFF, &ifr))
        die(ifname);
    if (setns(home_ns, CLONE_NEWNET))
        die("back to the engine's namespace");
    return fd;
}

static void epoll_add(int epfd, int fd, uint32_t tag, uint32_t index)
{
    struct epoll_event ev = { .events = EPOLLIN, .data.u64 = (uint64_t)tag << 32 | index };
    if (epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev))
        die("epoll_ctl");
}

/* The model's delivery: the frame to its host, addressed from the switch's port. */
static void deliver(void *ctx, struct model *m, int32_t port, uint32_t pkt, ns_t t)
{
    struct engine *e = ctx;
    uint8_t *f = e->frames + (size_t)pkt * FRAME_MAX;
    memcpy(f, e->s.ports[port].mac, 6);
    memcpy(f + 6, e->s.ports[m->ports[port].peer].mac, 6);
    if (e->nwriters) {
        struct delivery d = { pkt, e->tap_fd[port], m->pkts[pkt].len, t };
        writer_push(&e->writers[(uint32_t)port % e->nwriters], d);
        return;
    }
    write_frame(&e->sink, e->tap_fd[port], f, m->pkts[pkt].len, t);
    model_free(m, pkt);
}

/* Every frame waiting on one TAP, into the model at the time it is read. A
 * burst (a host without TCP Small Queues can send a thousand frames at once)
 * is read in slices, the model's due events handled between them, so that
 * reading does not hold deliveries back. */
static void drain_tap(struct engine *e, int32_t port, ns_t now)
{
    for (uint32_t n = 1;; n++) {
        if (n % DRAIN_SLICE == 0) {
            now = now_ns();
            model_advance(&e->m, now);
        }
        uint32_t pkt = model_alloc(&e->m);
        uint8_t scratch[FRAME_MAX];
        uint8_t *buf = pkt == NO_PKT ? scratch : e->frames + (size_t)pkt * FRAME_MAX;
        ssize_t n = read(e->tap_fd[port], buf, FRAME_MAX);
        if (n <= 0) {
            if (pkt != NO_PKT)
                model_free(&e->m, pkt);
            return;
        }
        e->tap_read++;
        if (pkt == NO_PKT)
            continue;                  /* counted by the model as pool_exhausted */
        if (n >= FRAME_MAX) {
            e->oversize++;
            model_free(&e->m, pkt);
            continue;
        }
        if (model_parse(&e->m.pkts[pkt], buf, (size_t)n)) {
            e->not_ipv4++;
            model_free(&e->m, pkt);
            continue;
        }
        model_inject(&e->m, port, pkt, now);
    }
}

static void write_counters(struct engine *e, FILE *out)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    ns_t now = now_ns();
    fprintf(out, "{\"t_ns\": %llu, \"ports\": [", (unsigned long long)now);
    for (uint32_t i = 0; i < e->m.nports; i++) {
        const struct port *p = &e->m.ports[i];
        fprintf(out, "%s{\"node\": \"%s\", \"port\": %u, \"intf\": \"%s\", \"rate_bps\": %llu",
                i ? ", " : "", e->s.nodes[p->node].name, p->index, e->s.ports[i].ifname,
                (unsigned long long)p->rate_bps);
        for (int l = 0; l < 2; l++) {
            const struct queue *q = &p->q[l];
            const char *pre = l ? "lane_" : "";
            fprintf(out, ", \"%sin\": %llu, \"%sin_bytes\": %llu, \"%sout\": %llu, \"%sout_bytes\": %llu, "
                    "\"%sdropped\": %llu, \"%sdropped_bytes\": %llu, \"%slost\": %llu, \"%squeued\": %u, "
                    "\"%squeued_bytes\": %llu",
                    pre, (unsigned long long)q->c.in, pre, (unsigned long long)q->c.in_bytes,
                    pre, (unsigned long long)q->c.out, pre, (unsigned long long)q->c.out_bytes,
                    pre, (unsigned long long)q->c.dropped, pre, (unsigned long long)q->c.dropped_bytes,
                    pre, (unsigned long long)q->c.lost, pre, q->count, pre, (unsigned long long)q->bytes);
        }
        fputc('}', out);
    }
    const struct model_stats *s = &e->m.s;
    fprintf(out, "], \"model\": {\"injected\": %llu, \"delivered\": %llu, \"delivered_bytes\": %llu, \"no_route\": %llu, "
            "\"pool_exhausted\": %llu, \"misdelivered\": %llu, \"acks_bypassed\": %llu, \"in_flight\": %u}",
            (unsigned long long)s->injected, (unsigned long long)s->delivered,
            (unsigned long long)s->delivered_bytes, (unsigned long long)s->no_route,
            (unsigned long long)s->pool_exhausted, (unsigned long long)s->misdelivered,
            (unsigned long long)s->acks_bypassed, e->m.in_use);
    struct lateness all;                  /* every thread's, merged (a writer's may be a write behind) */
    uint64_t written = e->sink.written, errors = e->sink.errors;
    if (lateness_init(&all))
        return;
    lateness_merge(&all, &e->sink.late);
    for (uint32_t i = 0; i < e->nwriters; i++) {
        lateness_merge(&all, &e->writers[i].sink.late);
        written += e->writers[i].sink.written;
        errors += e->writers[i].sink.errors;
    }
    fprintf(out, ", \"lateness\": {\"n\": %llu, \"mean_us\": %.3f, \"p50_us\": %llu, \"p99_us\": %llu, "
            "\"p999_us\": %llu, \"max_us\": %.3f, \"over_100ms\": %llu}",
            (unsigned long long)all.n, all.n ? (double)all.sum_ns / (double)all.n / 1000.0 : 0.0,
            (unsigned long long)lateness_percentile_us(&all, 0.5),
            (unsigned long long)lateness_percentile_us(&all, 0.99),
            (unsigned long long)lateness_percentile_us(&all, 0.999), (double)all.max_ns / 1000.0,
            (unsigned long long)all.over);
    free(all.bucket);
    fprintf(out, ", \"saturated_s\": [%llu", (unsigned long long)e->sink.duty.saturated);
    for (uint32_t i = 0; i < e->nwriters; i++)
        fprintf(out, ", %llu", (unsigned long long)e->writers[i].sink.duty.saturated);
    fprintf(out, "], \"seconds\": %llu", (unsigned long long)e->sink.duty.seconds);
    fprintf(out, ", \"taps\": {\"read\": %llu, \"written\": %llu, \"write_errors\": %llu, \"not_ipv4\": %llu, "
            "\"oversize\": %llu}, \"writers\": %u",
            (unsigned long long)e->tap_read, (unsigned long long)written, (unsigned long long)errors,
            (unsigned long long)e->not_ipv4, (unsigned long long)e->oversize, e->nwriters);
    fprintf(out, ", \"cpu\": {\"user_s\": %.6f, \"system_s\": %.6f}}\n",
            (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6,
            (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6);
}

static void reset_counters(struct engine *e)
{
    lateness_clear(&e->sink.late);
    memset(&e->sink.duty, 0, sizeof e->sink.duty);
    for (uint32_t i = 0; i < e->nwriters; i++)
        atomic_fetch_add(&e->writers[i].reset_gen, 1);
}

/* One command line from a client; the answer is one line. */
static void command(struct engine *e, int fd, char *line)
{
    char name[32];
    unsigned port;
    unsigned long long bps;
    char *answer = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&answer, &len);
    if (!out)
        return;
    if (!strcmp(line, "counters")) {
        write_counters(e, out);
    } else if (!strcmp(line, "reset")) {
        reset_counters(e);
        fputs("ok\n", out);
    } else if (sscanf(line, "rate %31s %u %llu", name, &port, &bps) == 3) {
        int32_t node = spec_node_index(&e->m, &e->s, name);
        int32_t p = node < 0 ? -1 : model_find_port(&e->m, (uint32_t)node, port);
        if (p < 0 || !bps) {
            fprintf(out, "error: no port %u on node %s, or a zero rate\n", port, name);
        } else {
            model_set_rate(&e->m, p, bps, now_ns());
            fputs("ok\n", out);
        }
    } else {
        fprintf(out, "error: unknown command: %.40s\n", line);
    }
    fclose(out);
    for (size_t done = 0; done < len;) {          /* answers are small: block until sent */
        ssize_t n = send(fd, answer + done, len - done, MSG_NOSIGNAL);
        if (n <= 0 && errno != EAGAIN && errno != EINTR)
            break;
        if (n > 0)
            done += (size_t)n;
    }
    free(answer);
}

static void client_readable(struct engine *e, uint32_t i)
{
    struct client *c = &e->clients[i];
    ssize_t n = read(c->fd, c->buf + c->len, sizeof c->buf - 1 - c->len);
    if (n <= 0) {
        if (n < 0 && errno == EAGAIN)
            return;
        close(c->fd);
        c->fd = -1;
        return;
    }
    c->len += (size_t)n;
    c->buf[c->len] = 0;
    char *nl;
    while ((nl = strchr(c->buf, '\n'))) {
        *nl = 0;
        command(e, c->fd, c->buf);
        c->len -= (size_t)(nl + 1 - c->buf);
        memmove(c->buf, nl + 1, c->len + 1);
    }
    if (c->len == sizeof c->buf - 1) {            /* a line too long: drop the client */
        close(c->fd);
        c->fd = -1;
    }
}

static void accept_client(struct engine *e, int listen_fd)
{
    int fd = accept4(listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0)
        return;
    for (uint32_t i = 0; i < MAX_CLIENTS; i++)
        if (e->clients[i].fd < 0) {
            e->clients[i].fd = fd;
            e->clients[i].len = 0;
            epoll_add(e->epfd, fd, TAG_CLIENT, i);
            return;
        }
    close(fd);
}

static int listen_control(const char *path)
{
    struct sockaddr_un addr = { .sun_family = AF_UNIX };
    if (strlen(path) >= sizeof addr.sun_path) {
        errno = ENAMETOOLONG;
        die(path);
    }
    strcpy(addr.sun_path, path);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    mode_t old = umask(0077);
    if (fd < 0 || bind(fd, (struct sockaddr *)&addr, sizeof addr) || listen(fd, 8))
        die(path);
    umask(old);
    return fd;
}

static void write_stats(struct engine *e, const char *path)
{
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (!f)
        return;
    write_counters(e, f);
    if (fclose(f) == 0)
        rename(tmp, path);
}

int main(int argc, char **argv)
{
    static struct engine e;
    int argi = 1;
    unsigned long long writers = 0, slack_us = 0, spin_us = 0, noise_us = 0, boost = 0, cpu = 0;
    for (; argi + 1 < argc && !strncmp(argv[argi], "--", 2); argi += 2) {
        unsigned long long *v = !strcmp(argv[argi], "--writers") ? &writers
                              : !strcmp(argv[argi], "--slack-us") ? &slack_us
                              : !strcmp(argv[argi], "--spin-us") ? &spin_us
                              : !strcmp(argv[argi], "--noise-us") ? &noise_us
                              : !strcmp(argv[argi], "--boost") ? &boost
                              : !strcmp(argv[argi], "--cpu") ? &cpu : NULL;
        char *end;
        if (!v || (*v = strtoull(argv[argi + 1], &end, 10), *end) || writers > MAX_WRITERS)
            argi = argc;
    }
    if (argc - argi != 3) {
        fprintf(stderr, "usage: fabric-engine [--writers 0..%d] [--slack-us N] [--spin-us N] [--noise-us N] [--boost N] [--cpu N] "
                "SPEC CONTROL_SOCKET STATS_FILE\n", MAX_WRITERS);
        return 2;
    }
    e.spin_ns = spin_us * 1000;
    e.slack_ns = slack_us * 1000;
    prctl(PR_SET_TIMERSLACK, e.slack_ns ? (unsigned long)e.slack_ns : 1UL, 0, 0, 0);
    if (boost && setpriority(PRIO_PROCESS, 0, -(int)(boost > 19 ? 19 : boost)))
        die("setpriority (--boost)");
    if (cpu) {                            /* --cpu N: on CPU N-1 only (0: anywhere) */
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET((int)cpu - 1, &set);
        if (sched_setaffinity(0, sizeof set, &set))
            die("sched_setaffinity (--cpu)");
    }
    signal(SIGPIPE, SIG_IGN);             /* a control client gone before its answer: not our end */
    char err[256];
    if (spec_load(argv[argi], &e.m, &e.s, err, sizeof err)) {
        fprintf(stderr, "fabric-engine: %s\n", err);
        return 2;
    }
    e.m.deliver = deliver;
    e.m.noise_ns = noise_us * 1000;
    e.m.deliver_ctx = &e;
    e.frames = malloc((size_t)e.m.npkts * FRAME_MAX);
    e.tap_fd = malloc(e.m.nports * sizeof *e.tap_fd);
    if (!e.frames || !e.tap_fd || lateness_init(&e.sink.late))
        die("memory");

    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGTERM);
    sigaddset(&sigs, SIGINT);
    sigaddset(&sigs, SIGHUP);
    sigprocmask(SIG_BLOCK, &sigs, NULL);
    int sfd = signalfd(-1, &sigs, SFD_NONBLOCK | SFD_CLOEXEC);
    e.epfd = epoll_create1(EPOLL_CLOEXEC);
    if (sfd < 0 || e.epfd < 0)
        die("signalfd/epoll");
    epoll_add(e.epfd, sfd, TAG_SIGNAL, 0);

    int home_ns = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
    if (home_ns < 0)
        die("/proc/self/ns/net");
    for (uint32_t i = 0; i < e.m.nports; i++) {
        const struct model *m = &e.m;
        e.tap_fd[i] = -1;
        if (!m->nodes[m->ports[i].node].is_host)
            continue;
        e.tap_fd[i] = open_tap(e.s.nodes[m->ports[i].node].nspid, e.s.ports[i].ifname, home_ns);
        epoll_add(e.epfd, e.tap_fd[i], TAG_TAP, i);
    }
    close(home_ns);
    e.nwriters = (uint32_t)writers;
    for (uint32_t i = 0; i < e.nwriters; i++)    /* after the signal mask: they inherit it */
        if (writer_start(&e.writers[i], e.m.npkts, e.frames, FRAME_MAX))
            die("a writer thread");
    int lfd = listen_control(argv[argi + 1]);
    epoll_add(e.epfd, lfd, TAG_LISTEN, 0);
    for (int i = 0; i < MAX_CLIENTS; i++)
        e.clients[i].fd = -1;
    printf("ready\n");
    fflush(stdout);

    struct epoll_event evs[256];
    for (;;) {
        for (uint32_t i = 0; i < e.nwriters; i++)
            writer_reclaim(&e.writers[i], &e.m);
        ns_t now = now_ns();
        model_advance(&e.m, now);
        ns_t next = model_next_time(&e.m);
        struct timespec wait, *waitp = NULL;
        if (next != NO_TIME) {
            ns_t d = next > now_ns() ? next - now_ns() : 0;
            if (d <= e.spin_ns)
                d = 0;
            wait.tv_sec = (time_t)(d / 1000000000u);
            wait.tv_nsec = (long)(d % 1000000000u);
            waitp = &wait;
        }
        ns_t waited = now_ns();
        int n = epoll_pwait2(e.epfd, evs, 256, waitp, NULL);
        if (n < 0 && errno != EINTR)
            die("epoll_pwait2");
        now = now_ns();
        duty_idle(&e.sink.duty, waited, now);
        duty_tick(&e.sink.duty, now);
        model_advance(&e.m, now);                /* what was due comes before what is read now */
        for (int i = 0; i < n; i++) {
            uint32_t tag = (uint32_t)(evs[i].data.u64 >> 32), idx = (uint32_t)evs[i].data.u64;
            if (tag == TAG_TAP) {
                now = now_ns();
                model_advance(&e.m, now);
                drain_tap(&e, (int32_t)idx, now);
            } else if (tag == TAG_CLIENT) {
                client_readable(&e, idx);
            } else if (tag == TAG_LISTEN) {
                accept_client(&e, lfd);
            } else if (tag == TAG_SIGNAL) {
                for (uint32_t w = 0; w < e.nwriters; w++)
                    writer_stop(&e.writers[w]);
                write_stats(&e, argv[argi + 2]);
                unlink(argv[argi + 1]);
                return 0;
            }
        }
    }
}
