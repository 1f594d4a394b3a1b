// SPDX-License-Identifier: GPL-2.0
/*
 * mathtest OBJ  (OBJ = build/mathtest.bpf.o; root)
 *
 * Reads lines of 38 integers from stdin:
 *   own_idx own_w own_r own_l  followed by 8 x (owner cwnd rtt_us loss_dist)
 *   followed by delay_us rwnd_pkts (hold.h's inputs)
 * and prints "n lia_cnt olia_inc hold" for each, computed by the BPF code in
 * the kernel (BPF_PROG_TEST_RUN).  See README.md.
 */
#include <stdio.h>
#include <string.h>
#include <linux/types.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

struct slot { __u32 owner, cwnd, rtt_us, loss_dist; };
struct mt_ctx {				/* = struct mt_ctx in mathtest.bpf.c */
	struct slot s[8];
	__u32 own_idx, own_w, own_r, own_l;
	__u32 n, lia;
	__s64 olia;
	__u32 delay, hold;
	__u64 rwnd_pkts;
};

static int print_fn(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	return level > LIBBPF_WARN ? 0 : vfprintf(stderr, fmt, ap);
}

int main(int argc, char **argv)
{
	struct bpf_object *obj;
	struct bpf_program *prog;
	struct mt_ctx c;
	int fd, i, rc = 0;

	if (argc != 2) {
		fprintf(stderr, "usage: mathtest OBJ < vectors\n");
		return 1;
	}
	libbpf_set_print(print_fn);
	obj = bpf_object__open_file(argv[1], NULL);
	if (!obj || bpf_object__load(obj)) {
		fprintf(stderr, "mathtest: cannot load %s\n", argv[1]);
		return 1;
	}
	prog = bpf_object__find_program_by_name(obj, "mathtest");
	fd = prog ? bpf_program__fd(prog) : -1;
	if (fd < 0) {
		fprintf(stderr, "mathtest: no program 'mathtest' in %s\n", argv[1]);
		rc = 1;
		goto out;
	}
	for (;;) {
		memset(&c, 0, sizeof(c));
		if (scanf("%u %u %u %u", &c.own_idx, &c.own_w, &c.own_r, &c.own_l) != 4)
			break;
		for (i = 0; i < 8; i++)
			if (scanf("%u %u %u %u", &c.s[i].owner, &c.s[i].cwnd,
				  &c.s[i].rtt_us, &c.s[i].loss_dist) != 4) {
				fprintf(stderr, "mathtest: short input line\n");
				rc = 1;
				goto out;
			}
		if (scanf("%u %llu", &c.delay, (unsigned long long *)&c.rwnd_pkts) != 2) {
			fprintf(stderr, "mathtest: short input line\n");
			rc = 1;
			goto out;
		}
		LIBBPF_OPTS(bpf_test_run_opts, opts, .ctx_in = &c, .ctx_size_in = sizeof(c));
		if (bpf_prog_test_run_opts(fd, &opts)) {
			perror("mathtest: BPF_PROG_TEST_RUN");
			rc = 1;
			goto out;
		}
		printf("%u %u %lld %u\n", c.n, c.lia, (long long)c.olia, c.hold);
	}
out:
	bpf_object__close(obj);
	return rc;
}
