/* The modelled fabric (model.h says what it is). A packet's life: injected
 * at its host's own port (the NIC), queued and serialised there, then at each
 * switch routed by destination to one of its equal-cost ports (a hash of the
 * 5-tuple with the switch's seed) and queued again, until it arrives at the
 * destination host's port and is handed to the deliver callback. */
#include "model.h"

#include <stdlib.h>
#include <string.h>

#define LANE_LIMIT_PKTS 1000   /* as l3's ACK lane (emulator/links.py, ACK_LANE_PKTS) */

/* -- the heap of events, by (t, seq) ------------------------------------ */

static int ev_before(const struct event *a, const struct event *b)
{
    return a->t < b->t || (a->t == b->t && a->seq < b->seq);
}

static int heap_push(struct model *m, ns_t t, uint32_t kind, uint32_t port, uint32_t arg)
{
    if (m->heap_len == m->heap_cap) {
        uint32_t cap = m->heap_cap ? m->heap_cap * 2 : 1024;
        struct event *h = realloc(m->heap, (size_t)cap * sizeof *h);
        if (!h)
            return -1;
        m->heap = h;
        m->heap_cap = cap;
    }
    struct event e = { t, m->seq++, kind, port, arg };
    uint32_t i = m->heap_len++;
    while (i > 0) {
        uint32_t parent = (i - 1) / 2;
        if (!ev_before(&e, &m->heap[parent]))
            break;
        m->heap[i] = m->heap[parent];
        i = parent;
    }
    m->heap[i] = e;
    return 0;
}

static struct event heap_pop(struct model *m)
{
    struct event top = m->heap[0], last = m->heap[--m->heap_len];
    uint32_t i = 0, n = m->heap_len;
    for (;;) {
        uint32_t c = 2 * i + 1;
        if (c >= n)
            break;
        if (c + 1 < n && ev_before(&m->heap[c + 1], &m->heap[c]))
            c++;
        if (!ev_before(&m->heap[c], &last))
            break;
        m->heap[i] = m->heap[c];
        i = c;
    }
    if (n)
        m->heap[i] = last;
    return top;
}

ns_t model_next_time(const struct model *m)
{
    return m->heap_len ? m->heap[0].t : NO_TIME;
}

/* -- building ------------------------------------------------------------ */

int model_init(struct model *m, uint32_t nnodes, uint32_t nports, uint32_t npkts, uint64_t seed)
{
    memset(m, 0, sizeof *m);
    m->nnodes = nnodes;
    m->nports = nports;
    m->npkts = npkts;
    m->rng = seed * 0x9E3779B97F4A7C15ull + 1;
    m->nodes = calloc(nnodes, sizeof *m->nodes);
    m->ports = calloc(nports, sizeof *m->ports);
    m->pkts = calloc(npkts, sizeof *m->pkts);
    if (!m->nodes || !m->ports || !m->pkts)
        return -1;
    for (uint32_t i = 0; i < npkts; i++)
        m->pkts[i].next_free = i + 1 < npkts ? i + 1 : NO_PKT;
    m->free_head = npkts ? 0 : NO_PKT;
    return 0;
}

void model_free_all(struct model *m)
{
    for (uint32_t i = 0; i < m->nports; i++)
        for (int l = 0; l < 2; l++)
            free(m->ports[i].q[l].ring);
    for (uint32_t i = 0; i < m->nnodes; i++) {
        free(m->nodes[i].route_off);
        free(m->nodes[i].route_cnt);
    }
    free(m->nodes);
    free(m->ports);
    free(m->pkts);
    free(m->heap);
    free(m->dest_addr);
    free(m->dest_port);
    free(m->route_ports);
    memset(m, 0, sizeof *m);
}

int model_set_node(struct model *m, uint32_t node, int is_host, uint32_t hash_seed,
                   uint32_t first_port, uint32_t nports)
{
    if (node >= m->nnodes || first_port + nports > m->nports)
        return -1;
    struct node *n = &m->nodes[node];
    n->is_host = is_host;
    n->hash_seed = hash_seed;
    n->first_port = first_port;
    n->nports = nports;
    for (uint32_t i = 0; i < nports; i++) {
        m->ports[first_port + i].node = node;
        m->ports[first_port + i].index = i;
    }
    return 0;
}

int32_t model_find_port(const struct model *m, uint32_t node, uint32_t index)
{
    if (node >= m->nnodes || index >= m->nodes[node].nports)
        return -1;
    return (int32_t)(m->nodes[node].first_port + index);
}

static int queue_alloc(struct queue *q, uint32_t cap)
{
    free(q->ring);
    q->ring = calloc(cap, sizeof *q->ring);
    q->cap = cap;
    return q->ring ? 0 : -1;
}

int model_set_port(struct model *m, uint32_t port, int32_t peer, uint64_t rate_bps, ns_t delay,
                   ns_t jitter, uint32_t loss_ppm, uint32_t limit_pkts, uint64_t limit_bytes)
{
    if (port >= m->nports || rate_bps == 0 || peer >= (int32_t)m->nports || jitter > delay)
        return -1;
    struct port *p = &m->ports[port];
    p->peer = peer;
    p->rate_bps = rate_bps;
    p->delay = delay;
    p->jitter = jitter;
    p->loss_ppm = loss_ppm;
    p->limit_pkts = limit_pkts;
    p->limit_bytes = limit_bytes;
    /* A byte limit lets small packets in by the dozen: room for 60-byte ones. */
    uint32_t cap = limit_bytes ? (uint32_t)(limit_bytes / 60) + 2 : limit_pkts + 2;
    return queue_alloc(&p->q[0], cap) || queue_alloc(&p->q[1], LANE_LIMIT_PKTS + 2);
}

int model_add_dest(struct model *m, uint32_t addr, uint32_t host_port)
{
    uint32_t n = m->ndests + 1;
    uint32_t *a = realloc(m->dest_addr, n * sizeof *a), *p;
    if (!a)
        return -1;
    m->dest_addr = a;
    p = realloc(m->dest_port, n * sizeof *p);
    if (!p)
        return -1;
    m->dest_port = p;
    a[m->ndests] = addr;
    p[m->ndests] = host_port;
    m->ndests = n;
    return 0;
}

static int32_t dest_index(const struct model *m, uint32_t addr)
{
    uint32_t lo = 0, hi = m->ndests;
    while (lo < hi) {
        uint32_t mid = (lo + hi) / 2;
        if (m->dest_addr[mid] < addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < m->ndests && m->dest_addr[lo] == addr ? (int32_t)lo : -1;
}

/* Sorts the destinations and gives every switch an empty route table. */
int model_finish(struct model *m)
{
    if (m->finished)
        return 0;
    m->finished = 1;
    for (uint32_t i = 1; i < m->ndests; i++)        /* insertion sort: a few hundred */
        for (uint32_t j = i; j > 0 && m->dest_addr[j - 1] > m->dest_addr[j]; j--) {
            uint32_t a = m->dest_addr[j], p = m->dest_port[j];
            m->dest_addr[j] = m->dest_addr[j - 1];
            m->dest_port[j] = m->dest_port[j - 1];
            m->dest_addr[j - 1] = a;
            m->dest_port[j - 1] = p;
        }
    for (uint32_t i = 1; i < m->ndests; i++)
        if (m->dest_addr[i] == m->dest_addr[i - 1])
            return -1;
    for (uint32_t i = 0; i < m->nnodes; i++) {
        struct node *n = &m->nodes[i];
        if (n->is_host)
            continue;
        n->route_off = calloc(m->ndests ? m->ndests : 1, sizeof *n->route_off);
        n->route_cnt = calloc(m->ndests ? m->ndests : 1, sizeof *n->route_cnt);
        if (!n->route_off || !n->route_cnt)
            return -1;
    }
    return 0;
}

int model_add_route(struct model *m, uint32_t sw, uint32_t addr, const uint32_t *ports, uint32_t n)
{
    int32_t d = dest_index(m, addr);
    if (sw >= m->nnodes || m->nodes[sw].is_host || d < 0 || !m->nodes[sw].route_off)
        return -1;
    if (m->nroute_ports + n > m->route_cap) {
        uint32_t cap = (m->route_cap + n) * 2;
        uint32_t *r = realloc(m->route_ports, cap * sizeof *r);
        if (!r)
            return -1;
        m->route_ports = r;
        m->route_cap = cap;
    }
    struct node *s = &m->nodes[sw];
    for (uint32_t i = 0; i < n; i++) {
        if (ports[i] >= s->nports)
            return -1;
        m->route_ports[m->nroute_ports + i] = s->first_port + ports[i];
    }
    s->route_off[d] = m->nroute_ports;
    s->route_cnt[d] = n;
    m->nroute_ports += n;
    return 0;
}

/* -- packets --------------------------------------------------------------- */

uint32_t model_alloc(struct model *m)
{
    uint32_t i = m->free_head;
    if (i == NO_PKT) {
        m->s.pool_exhausted++;
        return NO_PKT;
    }
    m->free_head = m->pkts[i].next_free;
    m->in_use++;
    return i;
}

void model_free(struct model *m, uint32_t pkt)
{
    m->pkts[pkt].next_free = m->free_head;
    m->free_head = pkt;
    m->in_use--;
}

static uint16_t be16(const uint8_t *b) { return (uint16_t)(b[0] << 8 | b[1]); }
static uint32_t be32(const uint8_t *b) { return (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3]; }

int model_parse(struct pkt *p, const uint8_t *f, size_t len)
{
    memset(p, 0, offsetof(struct pkt, next_free));
    if (len < 14 + 20 || len > UINT16_MAX || be16(f + 12) != 0x0800 || (f[14] >> 4) != 4)
        return -1;
    const uint8_t *ip = f + 14;
    size_t ihl = (size_t)(ip[0] & 15) * 4;
    uint16_t total = be16(ip + 2);
    if (ihl < 20 || 14 + ihl > len)
        return -1;
    p->len = (uint16_t)len;
    p->proto = ip[9];
    p->saddr = be32(ip + 12);
    p->daddr = be32(ip + 16);
    int first_fragment = (be16(ip + 6) & 0x1fff) == 0;
    if ((p->proto == 6 || p->proto == 17) && first_fragment && 14 + ihl + 4 <= len) {
        p->sport = be16(ip + ihl);
        p->dport = be16(ip + ihl + 2);
    }
    p->ack = p->proto == 6 && total < ACK_MAX_IP_LEN;
    return 0;
}

/* murmur3's finaliser over the 5-tuple: independent choices per seed. */
static uint32_t fmix(uint32_t h)
{
    h ^= h >> 16; h *= 0x85ebca6b; h ^= h >> 13; h *= 0xc2b2ae35; h ^= h >> 16;
    return h;
}

uint32_t model_hash(const struct pkt *p, uint32_t seed)
{
    uint32_t h = fmix(seed ^ 0x9747b28c);
    h = fmix(h ^ p->saddr);
    h = fmix(h ^ p->daddr);
    h = fmix(h ^ p->proto);
    return fmix(h ^ ((uint32_t)p->sport << 16 | p->dport));
}

static uint64_t rng_next(struct model *m)
{
    m->rng ^= m->rng >> 12; m->rng ^= m->rng << 25; m->rng ^= m->rng >> 27;
    return m->rng * 0x2545F4914F6CDD1Dull;
}

/* -- moving packets -------------------------------------------------------- */

static void enqueue(struct model *m, int32_t port, uint32_t pkt, ns_t now);

static void start_service(struct model *m, int32_t port, int lane, ns_t now)
{
    struct port *pt = &m->ports[port];
    struct queue *q = &pt->q[lane];
    uint32_t head = q->ring[q->head];
    q->busy = 1;
    heap_push(m, now + model_tx_time(pt->rate_bps, m->pkts[head].len), EV_DEPART, (uint32_t)port, (uint32_t)lane);
}

/* The switch at whose port `port` the packet arrives sends it on. */
static int32_t next_port(struct model *m, int32_t at, const struct pkt *p)
{
    struct node *n = &m->nodes[m->ports[at].node];
    uint32_t cnt = n->route_cnt[p->dst];
    if (!cnt)
        return -1;
    uint32_t choice = cnt == 1 ? 0 : model_hash(p, n->hash_seed) % cnt;
    return (int32_t)m->route_ports[n->route_off[p->dst] + choice];
}

static void arrive(struct model *m, int32_t at, uint32_t pkt, ns_t t)
{
    struct pkt *p = &m->pkts[pkt];
    if (m->nodes[m->ports[at].node].is_host) {
        if (m->noise_ns && !p->noised) {      /* late by up to noise_ns, in order */
            struct port *hp = &m->ports[at];
            ns_t late = t + rng_next(m) % (m->noise_ns + 1);
            if (late < hp->last_noised)
                late = hp->last_noised;
            hp->last_noised = late;
            p->noised = 1;
            heap_push(m, late, EV_ARRIVE, (uint32_t)m->ports[at].peer, pkt);
            return;
        }
        if ((uint32_t)at == m->dest_port[p->dst]) {
            m->s.delivered++;
            m->s.delivered_bytes += p->len;
            m->deliver(m->deliver_ctx, m, at, pkt, t);
        } else {
            m->s.misdelivered++;
            model_free(m, pkt);
        }
        return;
    }
    int32_t out = next_port(m, at, p);
    if (out < 0) {
        m->s.no_route++;
        model_free(m, pkt);
        return;
    }
    enqueue(m, out, pkt, t);
}

static ns_t link_arrival(struct model *m, struct port *pt, ns_t t)
{
    ns_t a = t + pt->delay;
    if (pt->jitter) {
        uint64_t span = 2 * pt->jitter + 1;
        a = a - pt->jitter + rng_next(m) % span;
    }
    if (a < pt->last_arrival)
        a = pt->last_arrival;
    pt->last_arrival = a;
    return a;
}

static void enqueue(struct model *m, int32_t port, uint32_t pkt, ns_t now)
{
    struct port *pt = &m->ports[port];
    const struct pkt *p = &m->pkts[pkt];
    int lane = m->ack_mode == ACK_LANE && p->ack;
    struct queue *q = &pt->q[lane];
    q->c.in++;
    q->c.in_bytes += p->len;
    if (pt->loss_ppm && rng_next(m) % 1000000 < pt->loss_ppm) {
        q->c.lost++;
        model_free(m, pkt);
        return;
    }
    uint32_t waiting = q->count - (uint32_t)q->busy;
    uint64_t waiting_bytes = q->bytes - (q->busy ? m->pkts[q->ring[q->head]].len : 0);
    int full = lane ? waiting >= LANE_LIMIT_PKTS
             : pt->limit_bytes ? waiting_bytes + p->len > pt->limit_bytes
             : waiting >= pt->limit_pkts;
    if (!full && !lane && m->random_drop && !m->nodes[pt->node].is_host) {
        int near = pt->limit_bytes
            ? waiting_bytes + p->len + RANDOM_DROP_PKTS * 1500ull > pt->limit_bytes
            : waiting + RANDOM_DROP_PKTS >= pt->limit_pkts;
        full = near && rng_next(m) % 1000 < RANDOM_DROP_PER_MILLE;
    }
    if (full || q->count == q->cap) {
        q->c.dropped++;
        q->c.dropped_bytes += p->len;
        model_free(m, pkt);
        return;
    }
    q->ring[(q->head + q->count) % q->cap] = pkt;
    q->count++;
    q->bytes += p->len;
    if (!q->busy)
        start_service(m, port, lane, now);
}

static void depart(struct model *m, int32_t port, int lane, ns_t t)
{
    struct port *pt = &m->ports[port];
    struct queue *q = &pt->q[lane];
    uint32_t pkt = q->ring[q->head];
    q->head = (q->head + 1) % q->cap;
    q->count--;
    q->bytes -= m->pkts[pkt].len;
    q->busy = 0;
    q->c.out++;
    q->c.out_bytes += m->pkts[pkt].len;
    if (q->count)
        start_service(m, port, lane, t);
    if (pt->peer < 0) {
        model_free(m, pkt);
        return;
    }
    ns_t a = link_arrival(m, pt, t);
    if (a == t)
        arrive(m, pt->peer, pkt, t);
    else
        heap_push(m, a, EV_ARRIVE, (uint32_t)port, pkt);
}

/* The simulator's ACKs: along the same hashed path, through no queue. */
static void bypass(struct model *m, int32_t port, uint32_t pkt, ns_t now)
{
    const struct pkt *p = &m->pkts[pkt];
    ns_t t = now;
    m->s.acks_bypassed++;
    for (int hops = 0; hops < 64; hops++) {
        struct port *pt = &m->ports[port];
        if (pt->peer < 0)
            break;
        t += pt->delay;
        if (m->nodes[m->ports[pt->peer].node].is_host) {
            if (t == now)
                arrive(m, pt->peer, pkt, t);
            else
                heap_push(m, t, EV_ARRIVE, (uint32_t)port, pkt);
            return;
        }
        port = next_port(m, pt->peer, p);
        if (port < 0)
            break;
    }
    m->s.no_route++;
    model_free(m, pkt);
}

void model_inject(struct model *m, int32_t host_port, uint32_t pkt, ns_t now)
{
    struct pkt *p = &m->pkts[pkt];
    int32_t d = dest_index(m, p->daddr);
    m->s.injected++;
    if (d < 0) {
        m->s.no_route++;
        model_free(m, pkt);
        return;
    }
    p->dst = d;
    if (m->ack_mode == ACK_SIM && p->ack)
        bypass(m, host_port, pkt, now);
    else
        enqueue(m, host_port, pkt, now);
}

uint32_t model_advance(struct model *m, ns_t now)
{
    uint32_t n = 0;
    while (m->heap_len && m->heap[0].t <= now) {
        struct event e = heap_pop(m);
        if (e.kind == EV_DEPART)
            depart(m, (int32_t)e.port, (int)e.arg, e.t);
        else
            arrive(m, m->ports[e.port].peer, e.arg, e.t);
        n++;
    }
    return n;
}

void model_set_rate(struct model *m, int32_t port, uint64_t rate_bps, ns_t now)
{
    (void)now;   /* the packet being sent keeps its time; the next one has the new rate */
    if (port >= 0 && (uint32_t)port < m->nports && rate_bps)
        m->ports[port].rate_bps = rate_bps;
}
