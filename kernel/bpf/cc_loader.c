// SPDX-License-Identifier: GPL-2.0
/*
 * cc_loader OBJ
 *
 * Loads a BPF object containing struct_ops tcp_congestion_ops maps (e.g.
 * mptcp_cc.bpf.o), registers every one of them, prints
 *
 *     ready <name> <name> ...
 *
 * on stdout and then blocks until stdin reaches EOF or it receives SIGTERM,
 * SIGINT or SIGHUP; then it unregisters the algorithms and exits 0.
 *
 * libbpf 1.1 registers struct_ops by updating the map (no BPF link), so an
 * algorithm stays registered until the map element is deleted; that is what
 * bpf_link__destroy() does for these "links".  Hence the loader never exits
 * after a successful load without destroying them, and it blocks the
 * termination signals for its whole life (they are read from a signalfd), so
 * a signal arriving during loading cannot kill it half-way either.
 *
 * Exit codes: 0 clean shutdown; 1 error (one line on stderr); 3 an algorithm
 * with one of our names is already registered (a previous loader still
 * running, or a leftover).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#define AVAIL_CC "/proc/sys/net/ipv4/tcp_available_congestion_control"
#define MAX_OPS 16

static const char *prog = "cc_loader";

static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	/* only warnings and errors (these include the verifier log) */
	if (level > LIBBPF_WARN)
		return 0;
	return vfprintf(stderr, fmt, ap);
}

/* Is `name` one of the space-separated words in AVAIL_CC?  -1 on error. */
static int cc_registered(const char *name)
{
	char buf[4096], *tok, *save = NULL;
	size_t n;
	FILE *f = fopen(AVAIL_CC, "r");

	if (!f)
		return -1;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	for (tok = strtok_r(buf, " \t\n", &save); tok; tok = strtok_r(NULL, " \t\n", &save))
		if (strcmp(tok, name) == 0)
			return 1;
	return 0;
}

int main(int argc, char **argv)
{
	struct bpf_link *links[MAX_OPS] = { 0 };
	struct bpf_map *maps[MAX_OPS];
	struct bpf_object *obj = NULL;
	struct bpf_map *map;
	struct pollfd pfd[2];
	sigset_t mask;
	int n = 0, i, err, sfd, rc = 1;
	bool done = false;

	if (argc != 2) {
		fprintf(stderr, "usage: %s OBJ\n", prog);
		return 1;
	}

	/* Block the termination signals now and receive them via a signalfd
	 * later, so that we always get to unregister. */
	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGHUP);
	if (sigprocmask(SIG_BLOCK, &mask, NULL) < 0) {
		fprintf(stderr, "%s: sigprocmask: %s\n", prog, strerror(errno));
		return 1;
	}
	signal(SIGPIPE, SIG_IGN);	/* a closed stdout must not kill us */
	sfd = signalfd(-1, &mask, SFD_CLOEXEC);
	if (sfd < 0) {
		fprintf(stderr, "%s: signalfd: %s\n", prog, strerror(errno));
		return 1;
	}

	libbpf_set_print(libbpf_print);

	obj = bpf_object__open_file(argv[1], NULL);
	if (!obj) {
		fprintf(stderr, "%s: cannot open %s: %s\n", prog, argv[1], strerror(errno));
		return 1;
	}

	/* The struct_ops maps are named like the algorithms they define. */
	bpf_object__for_each_map(map, obj) {
		if (bpf_map__type(map) != BPF_MAP_TYPE_STRUCT_OPS)
			continue;
		if (n == MAX_OPS) {
			fprintf(stderr, "%s: more than %d struct_ops maps in %s\n",
				prog, MAX_OPS, argv[1]);
			goto out;
		}
		maps[n++] = map;
	}
	if (!n) {
		fprintf(stderr, "%s: no struct_ops maps in %s\n", prog, argv[1]);
		goto out;
	}
	for (i = 0; i < n; i++) {
		int r = cc_registered(bpf_map__name(maps[i]));

		if (r < 0) {
			fprintf(stderr, "%s: cannot read %s: %s\n", prog, AVAIL_CC,
				strerror(errno));
			goto out;
		}
		if (r > 0) {
			fprintf(stderr, "%s: congestion control '%s' is already registered "
				"(another cc_loader still running, or a leftover); not loading\n",
				prog, bpf_map__name(maps[i]));
			rc = 3;
			goto out;
		}
	}

	err = bpf_object__load(obj);
	if (err) {
		fprintf(stderr, "%s: loading %s failed: %s\n", prog, argv[1], strerror(-err));
		goto out;
	}

	for (i = 0; i < n; i++) {
		links[i] = bpf_map__attach_struct_ops(maps[i]);
		if (!links[i]) {
			err = errno;
			fprintf(stderr, "%s: registering '%s' failed: %s\n", prog,
				bpf_map__name(maps[i]), strerror(err));
			/* lost a race against another loader */
			if (err == EEXIST)
				rc = 3;
			goto out;
		}
	}
	/* Registration is by the .name field; check that it matched. */
	for (i = 0; i < n; i++) {
		if (cc_registered(bpf_map__name(maps[i])) != 1) {
			fprintf(stderr, "%s: '%s' is not listed in %s after registration "
				"(map name differs from .name?)\n", prog,
				bpf_map__name(maps[i]), AVAIL_CC);
			goto out;
		}
	}

	printf("ready");
	for (i = 0; i < n; i++)
		printf(" %s", bpf_map__name(maps[i]));
	printf("\n");
	fflush(stdout);

	/* Wait for EOF on stdin or a termination signal. */
	pfd[0].fd = STDIN_FILENO;
	pfd[0].events = POLLIN;
	pfd[1].fd = sfd;
	pfd[1].events = POLLIN;
	while (!done) {
		if (poll(pfd, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			fprintf(stderr, "%s: poll: %s\n", prog, strerror(errno));
			goto out;
		}
		if (pfd[1].revents & POLLIN) {
			struct signalfd_siginfo si;

			if (read(sfd, &si, sizeof(si)) > 0)
				done = true;
		}
		if (pfd[0].revents & POLLNVAL) {
			done = true;	/* no stdin at all: nothing to wait for */
		} else if (pfd[0].revents & (POLLIN | POLLHUP | POLLERR)) {
			char buf[256];
			ssize_t r = read(STDIN_FILENO, buf, sizeof(buf));

			/* input is ignored; EOF (or a read error) ends us */
			if (r == 0 || (r < 0 && errno != EINTR && errno != EAGAIN))
				done = true;
		}
	}
	rc = 0;

out:
	/* Destroying a struct_ops "link" deletes the map element, which
	 * unregisters the algorithm. */
	for (i = 0; i < n; i++)
		if (links[i] && bpf_link__destroy(links[i]) && rc == 0) {
			fprintf(stderr, "%s: unregistering '%s' failed\n", prog,
				bpf_map__name(maps[i]));
			rc = 1;
		}
	bpf_object__close(obj);
	return rc;
}
