/* SPDX-License-Identifier: GPL-2.0 */
/*
 * liab: LIA plus a send hold on a subflow whose data would block the
 * receive window. It stands in for the NSDI 2012 paper's opportunistic
 * retransmission, which needs the packet scheduler; upstream MPTCP does not
 * let BPF replace that on this kernel. (liab does not penalize: halving a
 * slow subflow's window slows the drain of what is already queued on it,
 * which is the stall measured with liap in docs/experiments/wifi3g.md.)
 * The idea is BLEST's (Ferlin et al., IFIP Networking 2016): keep data off
 * a slow subflow when the fast ones would fill the receive window before
 * that data could arrive.
 *
 * How a congestion control can keep data off its subflow: upstream's
 * default scheduler (mptcp_subflow_get_send) ranks subflows by queued
 * bytes over an average of each one's pacing rate, and skips a subflow
 * whose average and current pacing rate are both zero. A congestion
 * control may call bpf_setsockopt(SO_MAX_PACING_RATE), and the kernel
 * clamps every later pacing rate it computes to that cap. So:
 *   - on each of its ACKs a subflow asks whether it should hold: it is the
 *     slowest (largest smoothed RTT) of at least two published subflows,
 *     and the others, at their window per RTT, would send half the
 *     connection's receive window (msk wnd_end - snd_una) or more before a
 *     byte handed to it now arrives. That delay is its RTT plus the time
 *     its window takes to send what it holds unsent (write_seq - snd_nxt):
 *     data queued on a subflow waits behind that queue, not just one RTT;
 *   - on a change it sets its cap to 0 (hold) or lifts it (~0U, no cap).
 *     Setting a cap also switches on TCP's internal pacing
 *     (sk_pacing_status); the status is put back as it was, so a lifted
 *     subflow sends as before;
 *   - at a quarter of the window instead of half it only stops growing its
 *     window (FREEZE_WINDOW_SHIFT below says why).
 * The scheduler's average falls to 0 the next time it picks the held
 * subflow with an empty queue, so at most one more small chunk (what the
 * window has just opened) goes on it. A held subflow with nothing in
 * flight gets no ACKs, so it is judged again only when data reaches it
 * another way (MPTCP's retransmission scheduler ignores pacing rates); the
 * decision's inputs, the receive buffer and the fast subflows' rate, are
 * the ones that change slowly in E4.
 *
 * `holds` counts holds begun (read by kernel/coupled_cc.py).
 * Included by mptcp_cc.bpf.c.
 */
#ifndef MPTCP_CC_HOLD_H
#define MPTCP_CC_HOLD_H

#define SOL_SOCKET_		1	/* include/uapi/asm-generic/socket.h */
#define SO_MAX_PACING_RATE_	47
#define NO_PACING_CAP		(-1)	/* ~0U: the kernel's "no cap" */
/* Hold when the others would send 1/2^HOLD_WINDOW_SHIFT of the receive
 * window within the delay: the margin BLEST's lambda gives for estimates
 * that lag (a slow subflow's RTT grows as its queue fills). Stop growing
 * the window at 1/2^FREEZE_WINDOW_SHIFT: a slow path with a deep buffer
 * (E4's 3G, 2 s) would otherwise fill it, its RTT would pass the hold's
 * threshold with that much data already committed to it, and that data
 * would block the window however soon the hold began. */
#define HOLD_WINDOW_SHIFT	1
#define FREEZE_WINDOW_SHIFT	2
enum { HOLD_NONE, HOLD_FREEZE, HOLD_SEND };

__u64 holds = 0;

/* What a subflow with smoothed RTT own_r (us) should do. If it is the
 * slowest of the published subflows (at least one other), count what those
 * others, at their window-per-RTT rates, send within `delay` (us, what a
 * byte handed to it now waits): HOLD_SEND when that is half the receive
 * window (rwnd_pkts, in MSS) or more, HOLD_FREEZE (no window growth) when
 * it is a quarter or more, else HOLD_NONE. A global function, so that
 * mathtest.bpf.c can run it on given numbers. */
__noinline __u32 mptcp_cc_hold_level(const struct conn_state *cs, __u32 own_idx,
				     __u32 own_r, __u32 delay, __u64 rwnd_pkts)
{
	__u64 others_pkts = 0;
	__u32 others = 0;
	int i;

	if (!cs || !own_r || !rwnd_pkts)
		return HOLD_NONE;
#pragma unroll
	for (i = 0; i < MAX_SF; i++) {
		const struct sf_slot *s = &cs->s[i];
		__u32 r = s->rtt_us, w = s->cwnd;

		if ((__u32)i == own_idx || !s->owner || !r)
			continue;
		if (r >= own_r)
			return HOLD_NONE;
		w = min_u32(w, W_CAP);
		/* w <= 2^20, delay <= 2^24: fits in 64 bits */
		others_pkts += (__u64)w * min_u32(delay, RTT_CAP) / r;
		others++;
	}
	if (!others)
		return HOLD_NONE;
	if ((others_pkts << HOLD_WINDOW_SHIFT) >= rwnd_pkts)
		return HOLD_SEND;
	if ((others_pkts << FREEZE_WINDOW_SHIFT) >= rwnd_pkts)
		return HOLD_FREEZE;
	return HOLD_NONE;
}

/* The connection's receive window in bytes (its right edge less its data
 * ack), 0 when sk's connection cannot be read. */
static __always_inline __u64 conn_receive_window(struct sock *sk, struct cc_priv *ca)
{
	struct mptcp_sock *msk = conn_of(sk, ca);
	__u64 una, wnd_end;

	if (!msk)
		return 0;
	una = msk->snd_una;
	wnd_end = msk->wnd_end;
	return (__s64)(wnd_end - una) > 0 ? wnd_end - una : 0;
}

/* What a byte handed to sk now waits before it arrives, in us: its RTT,
 * plus its unsent bytes at its window per RTT. Capped at RTT_CAP. */
static __always_inline __u32 send_delay(const struct tcp_sock *tp, __u32 own_r)
{
	__u64 unsent = tp->write_seq - tp->snd_nxt;
	__u64 window = (__u64)max_u32(tp->snd_cwnd, 1) * max_u32(tp->mss_cache, 1);
	__u64 delay = own_r + unsent * own_r / window;

	return delay > RTT_CAP ? RTT_CAP : (__u32)delay;
}

/* Judge the hold on this ACK and apply a change; returns the level
 * (HOLD_NONE when sk cannot judge). */
static __always_inline __u32 hold_update(struct sock *sk, struct cc_priv *ca,
					 struct conn_state *cs, __u32 own_r)
{
	struct tcp_sock *tp = tcp_sk(sk);
	__u32 level, want, status;
	int cap;

	if (!ca->slot || !own_r)
		return HOLD_NONE;
	level = mptcp_cc_hold_level(cs, (__u32)ca->slot - 1, own_r, send_delay(tp, own_r),
				    conn_receive_window(sk, ca) / max_u32(tp->mss_cache, 1));
	want = level == HOLD_SEND;
	if (want == ca->held)
		return level;
	cap = want ? 0 : NO_PACING_CAP;
	status = sk->sk_pacing_status;
	if (bpf_setsockopt(sk, SOL_SOCKET_, SO_MAX_PACING_RATE_, &cap, sizeof(cap)))
		return level;
	sk->sk_pacing_status = status;
	ca->held = want;
	if (want)
		__sync_fetch_and_add(&holds, 1);
	return level;
}

#endif
