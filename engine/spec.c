/* Reading the spec (spec.h). Its lines, in this order:
 *   fabric-engine-spec 1
 *   model NNODES NPORTS POOL SEED ACK(data|lane|sim) [RANDOM_DROP(0|1)]
 *   node IDX host|switch NAME NSPID HASHSEED FIRSTPORT NPORTS
 *   port IDX PEER RATE_BPS DELAY_NS JITTER_NS LOSS_PPM LIMIT_PKTS LIMIT_BYTES IFNAME MAC
 *   dest A.B.C.D PORT                 (a host port's address)
 *   route SWITCH A.B.C.D PORTNO...   (a switch's equal-cost ports to that address)
 *   end
 */
#define _GNU_SOURCE
#include "spec.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_ROUTE 64

static int parse_addr(const char *text, uint32_t *addr)
{
    unsigned a, b, c, d;
    char tail;
    if (sscanf(text, "%u.%u.%u.%u%c", &a, &b, &c, &d, &tail) != 4 || a > 255 || b > 255 || c > 255 || d > 255)
        return -1;
    *addr = a << 24 | b << 16 | c << 8 | d;
    return 0;
}

static int parse_mac(const char *text, uint8_t mac[6])
{
    unsigned v[6];
    if (sscanf(text, "%x:%x:%x:%x:%x:%x", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5]) != 6)
        return -1;
    for (int i = 0; i < 6; i++)
        mac[i] = (uint8_t)v[i];
    return 0;
}

static int parse_ack(const char *text, enum ack_mode *mode)
{
    static const char *names[] = { "data", "lane", "sim" };
    for (int i = 0; i < 3; i++)
        if (!strcmp(text, names[i])) {
            *mode = (enum ack_mode)i;
            return 0;
        }
    return -1;
}

static int line_ok(struct model *m, struct spec *s, char *line, int *finished)
{
    char word[32], a[64], b[64];
    if (sscanf(line, "%31s", word) != 1)
        return 0;
    if (!strcmp(word, "fabric-engine-spec"))
        return strcmp(line, "fabric-engine-spec 1") ? -1 : 0;
    if (!strcmp(word, "model")) {
        unsigned nn, np, pool;
        unsigned long long seed;
        int random_drop = 0;
        if (sscanf(line, "model %u %u %u %llu %63s %d", &nn, &np, &pool, &seed, a, &random_drop) < 5
            || !nn || !np || !pool)
            return -1;
        if (model_init(m, nn, np, pool, seed))
            return -1;
        s->nodes = calloc(nn, sizeof *s->nodes);
        s->ports = calloc(np, sizeof *s->ports);
        m->random_drop = random_drop;
        return s->nodes && s->ports ? parse_ack(a, &m->ack_mode) : -1;
    }
    if (!m->nodes)
        return -1;
    if (!strcmp(word, "node")) {
        unsigned idx, seed, first, n;
        int pid;
        if (sscanf(line, "node %u %63s %31s %d %u %u %u", &idx, a, b, &pid, &seed, &first, &n) != 7
            || idx >= m->nnodes || (strcmp(a, "host") && strcmp(a, "switch")))
            return -1;
        snprintf(s->nodes[idx].name, sizeof s->nodes[idx].name, "%.31s", b);
        s->nodes[idx].nspid = pid;
        return model_set_node(m, idx, !strcmp(a, "host"), seed, first, n);
    }
    if (!strcmp(word, "port")) {
        unsigned idx, loss, limit;
        int peer;
        unsigned long long rate, delay, jitter, limit_bytes;
        if (sscanf(line, "port %u %d %llu %llu %llu %u %u %llu %15s %63s", &idx, &peer, &rate, &delay,
                   &jitter, &loss, &limit, &limit_bytes, b, a) != 10 || idx >= m->nports)
            return -1;
        snprintf(s->ports[idx].ifname, sizeof s->ports[idx].ifname, "%.15s", b);
        if (parse_mac(a, s->ports[idx].mac))
            return -1;
        return model_set_port(m, idx, peer, rate, delay, jitter, loss, limit, limit_bytes);
    }
    if (!strcmp(word, "dest")) {
        uint32_t addr;
        unsigned port;
        if (sscanf(line, "dest %63s %u", a, &port) != 2 || parse_addr(a, &addr) || port >= m->nports)
            return -1;
        return model_add_dest(m, addr, port);
    }
    if (!strcmp(word, "route")) {
        if (model_finish(m))
            return -1;
        unsigned sw;
        int used;
        uint32_t addr, ports[MAX_ROUTE], n = 0;
        if (sscanf(line, "route %u %63s%n", &sw, a, &used) != 2 || parse_addr(a, &addr))
            return -1;
        for (char *p = line + used, *end; n < MAX_ROUTE; p = end) {
            unsigned long v = strtoul(p, &end, 10);
            if (end == p)
                break;
            ports[n++] = (uint32_t)v;
        }
        return n ? model_add_route(m, sw, addr, ports, n) : -1;
    }
    if (!strcmp(word, "end")) {
        *finished = 1;
        return model_finish(m);
    }
    return -1;
}

int spec_load(const char *path, struct model *m, struct spec *s, char *err, size_t errlen)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, errlen, "cannot open the spec %s", path);
        return -1;
    }
    memset(m, 0, sizeof *m);
    memset(s, 0, sizeof *s);
    char line[1024];
    int lineno = 0, finished = 0;
    while (!finished && fgets(line, sizeof line, f)) {
        lineno++;
        line[strcspn(line, "\n")] = 0;
        if (line_ok(m, s, line, &finished)) {
            snprintf(err, errlen, "spec line %d not understood: %.60s", lineno, line);
            fclose(f);
            return -1;
        }
    }
    fclose(f);
    if (!finished) {
        snprintf(err, errlen, "the spec ends before its 'end' line");
        return -1;
    }
    return 0;
}

int32_t spec_node_index(const struct model *m, const struct spec *s, const char *name)
{
    for (uint32_t i = 0; i < m->nnodes; i++)
        if (!strcmp(s->nodes[i].name, name))
            return (int32_t)i;
    return -1;
}
