/* The modelled fabric: every link end's egress a FIFO served at the link's
 * rate (one event per service completion, as htsim's queue), a packet's hops
 * kept in one time-ordered heap. No I/O and no clock: the caller passes the
 * time to every call, so a test feeds packets and times and reads what
 * leaves (engine/test_model.c). */
#ifndef MODEL_H
#define MODEL_H

#include <stdint.h>
#include <stddef.h>

typedef uint64_t ns_t;                   /* CLOCK_MONOTONIC, nanoseconds */
#define NO_TIME UINT64_MAX
#define NO_PKT UINT32_MAX

enum ack_mode {
    ACK_DATA = 0,   /* pure ACKs queue with data, as in a real switch */
    ACK_LANE = 1,   /* a FIFO of their own per port at the link rate (l3's --ack-lane) */
    ACK_SIM = 2,    /* no queue, no serialisation, only the links' delay: the paper's simulator */
};
#define RANDOM_DROP_PKTS 3     /* htsim's RandomQueue: RANDOM_BUFFER, drop probability 0.1 */
#define RANDOM_DROP_PER_MILLE 100
#define ACK_MAX_IP_LEN 128   /* a pure ACK: IPv4 total length below this (as l3's filter) */

struct pkt {                             /* one frame in the model */
    uint32_t saddr, daddr;               /* host order */
    uint16_t sport, dport;
    uint8_t proto, ack, noised;
    uint16_t len;                        /* Ethernet frame bytes, as HTB counts them */
    int32_t dst;                         /* destination host port (global index) */
    uint32_t next_free;
};

struct counters {
    uint64_t in, in_bytes, out, out_bytes, dropped, dropped_bytes, lost;
};

struct queue {                           /* a FIFO of packet indices */
    uint32_t *ring, cap, head, count;
    uint64_t bytes;
    int busy;                            /* the head is being serialised */
    struct counters c;
};

struct port {                            /* the egress of one end of a link */
    uint32_t node, index;                /* owner and its port number */
    int32_t peer;                        /* global index of the other end (-1: none) */
    uint64_t rate_bps;
    ns_t delay, jitter;
    uint32_t loss_ppm;
    uint32_t limit_pkts;                 /* packets waiting, besides the one being sent */
    uint64_t limit_bytes;                /* 0: no byte limit */
    ns_t last_arrival;                   /* jitter never reorders */
    ns_t last_noised;                    /* a host port's: delivery noise never reorders */
    struct queue q[2];                   /* [0] data (and ACKs), [1] the ACK lane */
};

struct node {
    int is_host;
    uint32_t hash_seed;
    uint32_t first_port, nports;         /* its ports: ports[first_port ..] */
    uint32_t *route_off, *route_cnt;     /* a switch's: per destination, into route_ports */
};

struct event {
    ns_t t;
    uint64_t seq;                        /* equal times: in the order scheduled */
    uint32_t kind, port, arg;            /* EV_DEPART: port's queue arg; EV_ARRIVE: pkt arg at port's peer */
};
enum { EV_DEPART = 0, EV_ARRIVE = 1 };

struct model_stats {                     /* what the model itself counts, besides ports */
    uint64_t injected, delivered, delivered_bytes, no_route, pool_exhausted, misdelivered, acks_bypassed;
};

struct model;
/* Called for each packet that reaches its destination host port at time t;
 * the callee owns the packet until it calls model_free(). */
typedef void (*deliver_fn)(void *ctx, struct model *m, int32_t host_port, uint32_t pkt, ns_t t);

struct model {
    uint32_t nnodes, nports, ndests;
    int finished;                         /* model_finish() done: routes may be added */
    struct node *nodes;
    struct port *ports;
    uint32_t *dest_addr, *dest_port;      /* sorted addresses -> host port */
    uint32_t *route_ports, nroute_ports, route_cap;
    struct pkt *pkts;
    uint32_t npkts, free_head, in_use;
    struct event *heap;
    uint32_t heap_len, heap_cap;
    uint64_t seq, rng;
    enum ack_mode ack_mode;
    ns_t noise_ns;                        /* deliveries late by up to this (a trust test) */
    int random_drop;                      /* the simulator's: 1 in 10 dropped in a switch queue's last 3 packets */
    deliver_fn deliver;
    void *deliver_ctx;
    struct model_stats s;
};

/* Building: nodes first, then each node's ports in order, then routes. */
int model_init(struct model *m, uint32_t nnodes, uint32_t nports, uint32_t npkts, uint64_t seed);
void model_free_all(struct model *m);
int model_set_node(struct model *m, uint32_t node, int is_host, uint32_t hash_seed,
                   uint32_t first_port, uint32_t nports);
int model_set_port(struct model *m, uint32_t port, int32_t peer, uint64_t rate_bps, ns_t delay,
                   ns_t jitter, uint32_t loss_ppm, uint32_t limit_pkts, uint64_t limit_bytes);
int model_add_dest(struct model *m, uint32_t addr, uint32_t host_port);   /* then model_finish */
int model_add_route(struct model *m, uint32_t sw, uint32_t addr, const uint32_t *ports, uint32_t n);
int model_finish(struct model *m);
int32_t model_find_port(const struct model *m, uint32_t node, uint32_t index);

/* Running. */
uint32_t model_alloc(struct model *m);             /* NO_PKT when the pool is empty */
void model_free(struct model *m, uint32_t pkt);
int model_parse(struct pkt *p, const uint8_t *frame, size_t len);   /* 0: IPv4 */
void model_inject(struct model *m, int32_t host_port, uint32_t pkt, ns_t now);
ns_t model_next_time(const struct model *m);
uint32_t model_advance(struct model *m, ns_t now);    /* events due by now; returns how many */
void model_set_rate(struct model *m, int32_t port, uint64_t rate_bps, ns_t now);
uint32_t model_hash(const struct pkt *p, uint32_t seed);
static inline ns_t model_tx_time(uint64_t rate_bps, uint32_t len)
{
    return (ns_t)(((unsigned __int128)len * 8u * 1000000000u + rate_bps - 1) / rate_bps);
}
#endif
