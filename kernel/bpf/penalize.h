/* SPDX-License-Identifier: GPL-2.0 */
/*
 * liap: LIA with the paper's penalization of slow subflows (Raiciu et al.,
 * "How Hard Can It Be? Designing and Implementing a Deployable Multipath
 * TCP", NSDI 2012, section 4.2, "Mechanism 2"). When the connection is
 * limited by the receiver's window and a slow subflow holds data the
 * receiver waits for, that subflow's window is halved (and its ssthresh
 * set to the new window), at most once per its round-trip time: it then
 * holds less of the shared receive buffer, and the fast subflows can use it.
 *
 * A congestion control can only change the window of the subflow whose
 * callback runs, so each subflow judges itself, on its own ACKs:
 *   - the connection is window-limited: the MPTCP-level next byte to send
 *     is within one MSS of the right edge of the peer's window
 *     (mptcp_sock.snd_nxt against wnd_end, read through the subflow
 *     context's `conn`);
 *   - this subflow has data in flight and the largest smoothed RTT of the
 *     connection's subflows (their published slots): the subflow whose
 *     data arrives last. The paper penalizes the subflow that sent the
 *     oldest unacknowledged byte; which subflow that is, the MPTCP
 *     retransmit queue knows and a congestion control cannot read, so the
 *     slowest subflow with data in flight stands for it;
 *   - it was not penalized within its last smoothed RTT.
 * The paper's other mechanism, opportunistic retransmission (sending the
 * blocking data again on a fast subflow), needs the packet scheduler, which
 * upstream MPTCP does not let BPF replace on this kernel.
 *
 * `penalties` counts the windows halved (read by kernel/coupled_cc.py).
 * Included by mptcp_cc.bpf.c after its helpers.
 */
#ifndef MPTCP_CC_PENALIZE_H
#define MPTCP_CC_PENALIZE_H

__u64 penalties = 0;

/* Whether the MPTCP connection of sk cannot send another full segment
 * because of the peer's receive window. */
static __always_inline bool conn_window_limited(struct sock *sk, struct cc_priv *ca)
{
	struct mptcp_sock *msk = conn_of(sk, ca);
	__u64 snd_nxt, wnd_end;

	if (!msk)
		return false;
	snd_nxt = msk->snd_nxt;
	wnd_end = msk->wnd_end;
	return (__s64)(wnd_end - snd_nxt) < (__s64)tcp_sk(sk)->mss_cache;
}

/* Whether sk has data in flight and no other subflow of its connection
 * has published a larger smoothed RTT (and there is another subflow). */
static __always_inline bool slowest_in_flight(struct sock *sk, struct conn_state *cs,
					      const struct cc_priv *ca, __u32 own_r)
{
	__u32 own_idx = (__u32)ca->slot - 1, others = 0;
	int i;

	if (!tcp_sk(sk)->packets_out || !own_r)
		return false;
#pragma unroll
	for (i = 0; i < MAX_SF; i++) {
		if ((__u32)i == own_idx || !cs->s[i].owner || !cs->s[i].rtt_us)
			continue;
		if (cs->s[i].rtt_us > own_r)
			return false;
		others++;
	}
	return others > 0;
}

/* The penalty, if it is due: returns true when the window was halved. */
static __always_inline bool penalize_if_holding(struct sock *sk, struct cc_priv *ca,
						struct conn_state *cs, __u32 own_r)
{
	struct tcp_sock *tp = tcp_sk(sk);
	__u64 now = tp->tcp_mstamp;	/* us, the time of this ACK */

	if (ca->penalized_us && now - ca->penalized_us < own_r)
		return false;
	if (!slowest_in_flight(sk, cs, ca, own_r) || !conn_window_limited(sk, ca))
		return false;
	tp->snd_cwnd = max_u32(tp->snd_cwnd >> 1, 2);
	tp->snd_ssthresh = tp->snd_cwnd;
	ca->penalized_us = now;
	__sync_fetch_and_add(&penalties, 1);
	return true;
}

#endif
