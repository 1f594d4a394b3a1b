/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The corrupted windows of mptcp_cc.bpf.c, recorded with the state around
 * them, so that their cause can be found rather than guessed (issue 24).
 *
 * Each time a callback of ours finds a window or ssthresh that
 * repair_window() would repair (or that our own cong_avoid has just
 * written, or that Reno's undo would restore), one record is written into
 * repair_log, up to REPAIR_LOG_LEN records since the object was loaded;
 * repair_log_seen counts them all. A record holds what the socket's
 * tcp_sock says at that moment (before any repair) and what it said at the
 * end of this socket's previous callback (`last`): the kernel wrote the
 * corrupted value between the two, in the code that runs between those two
 * callbacks. The harness reads both from the object's .bss map with bpftool
 * (kernel/coupled_cc.py) and puts the records into the run's run.json.
 *
 * The hook and kind numbers are read by name in kernel/coupled_cc.py
 * (REPAIR_HOOKS, REPAIR_KINDS): keep the two in step.
 */
#ifndef MPTCP_CC_REPAIR_LOG_H
#define MPTCP_CC_REPAIR_LOG_H

#define REPAIR_LOG_LEN 64

/* Where a record was taken. */
enum {
	HOOK_NONE = 0,
	HOOK_CONG_AVOID = 1,		/* on entry to cong_avoid */
	HOOK_AFTER_CONG_AVOID = 2,	/* what our own cong_avoid wrote */
	HOOK_SSTHRESH = 3,
	HOOK_SET_STATE = 4,
	HOOK_IN_ACK_EVENT = 5,
	HOOK_UNDO_CWND = 6,
};

/* What was wrong (bits). */
#define KIND_CWND_OVER_CAP		1	/* snd_cwnd > W_CAP */
#define KIND_INFINITE_SSTHRESH		2	/* ssthresh infinite in CWR or Recovery */
#define KIND_SSTHRESH_OVER_CAP		4	/* W_CAP < ssthresh < infinite */
#define KIND_UNDO_OVER_CAP		8	/* Reno's undo would set a window > W_CAP */

/* A socket's state at the end of one of our callbacks (kept in cc_priv). */
struct hook_snapshot {
	__u8  hook;
	__u8  ca_state;
	__u16 pad;
	__u32 cwnd;
	__u32 ssthresh;
	__u32 prior_cwnd;
	__u32 prior_ssthresh;
	__u32 acked;		/* cong_avoid's argument, set_state's new state, else 0 */
};

struct repair_record {
	__u64 ts_ns;		/* bpf_ktime_get_ns() */
	__u32 token;		/* the MPTCP connection, 0 if not known */
	__u8  hook;
	__u8  kind;
	__u8  ca_state;
	__u8  retransmits;	/* icsk_retransmits */
	__u32 cwnd;
	__u32 ssthresh;
	__u32 prior_cwnd;
	__u32 prior_ssthresh;
	__u32 undo_marker;
	__u32 undo_retrans;
	__u32 high_seq;
	__u32 snd_una;
	__u32 snd_nxt;
	__u32 prr_delivered;
	__u32 prr_out;
	__u32 snd_cwnd_cnt;
	__u32 delivered;
	__u32 packets_out;
	__u32 sacked_out;
	__u32 lost_out;
	__u32 retrans_out;
	__u32 acked;		/* as in hook_snapshot */
	struct hook_snapshot last;
};

struct repair_record repair_log[REPAIR_LOG_LEN] = {};
__u64 repair_log_seen = 0;

static __always_inline void take_snapshot(const struct tcp_sock *tp, struct hook_snapshot *s,
					  __u8 hook, __u8 ca_state, __u32 acked)
{
	s->hook = hook;
	s->ca_state = ca_state;
	s->cwnd = tp->snd_cwnd;
	s->ssthresh = tp->snd_ssthresh;
	s->prior_cwnd = tp->prior_cwnd;
	s->prior_ssthresh = tp->prior_ssthresh;
	s->acked = acked;
}

static __always_inline void log_corrupted(struct sock *sk, const struct tcp_sock *tp, __u32 token,
					  __u8 hook, __u8 kind, __u8 ca_state, __u32 acked,
					  const struct hook_snapshot *last)
{
	struct repair_record *r;
	__u64 i = __sync_fetch_and_add(&repair_log_seen, 1);

	if (i >= REPAIR_LOG_LEN)
		return;
	r = &repair_log[i];
	r->ts_ns = bpf_ktime_get_ns();
	r->token = token;
	r->hook = hook;
	r->kind = kind;
	r->ca_state = ca_state;
	r->retransmits = ((struct inet_connection_sock *)sk)->icsk_retransmits;
	r->cwnd = tp->snd_cwnd;
	r->ssthresh = tp->snd_ssthresh;
	r->prior_cwnd = tp->prior_cwnd;
	r->prior_ssthresh = tp->prior_ssthresh;
	r->undo_marker = tp->undo_marker;
	r->undo_retrans = tp->undo_retrans;
	r->high_seq = tp->high_seq;
	r->snd_una = tp->snd_una;
	r->snd_nxt = tp->snd_nxt;
	r->prr_delivered = tp->prr_delivered;
	r->prr_out = tp->prr_out;
	r->snd_cwnd_cnt = tp->snd_cwnd_cnt;
	r->delivered = tp->delivered;
	r->packets_out = tp->packets_out;
	r->sacked_out = tp->sacked_out;
	r->lost_out = tp->lost_out;
	r->retrans_out = tp->retrans_out;
	r->acked = acked;
	r->last = *last;
}

#endif
