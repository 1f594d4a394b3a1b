/* The engine's spec: a line format written by emulator/fabrics/model.py from
 * the dctopo topology (libc only: sscanf reads it, no JSON parser needed). */
#ifndef SPEC_H
#define SPEC_H

#include "model.h"

struct spec_node { char name[32]; int nspid; };
struct spec_port { char ifname[16]; uint8_t mac[6]; };

struct spec {
    struct spec_node *nodes;
    struct spec_port *ports;
};

/* Fills `m` and `s` from the file; on failure returns -1 with one line in err. */
int spec_load(const char *path, struct model *m, struct spec *s, char *err, size_t errlen);
int32_t spec_node_index(const struct model *m, const struct spec *s, const char *name);
#endif
