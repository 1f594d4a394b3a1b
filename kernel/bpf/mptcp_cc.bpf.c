// SPDX-License-Identifier: GPL-2.0
/*
 * Coupled congestion control for upstream-Linux MPTCP subflows, as BPF
 * struct_ops TCP congestion-control algorithms:
 *
 *   lia   - RFC 6356 "Linked Increases" (Raiciu, Handley, Wischik 2011)
 *   olia  - "Opportunistic LIA", Khalili, Gast, Popovic, Le Boudec,
 *           "MPTCP is not Pareto-optimal", CoNEXT 2012 / IEEE-ACM ToN 2013
 *   ewtcp - equally-weighted TCP (Honda et al. 2009), as evaluated in
 *           Raiciu et al., NSDI 2011: Reno with additive increase a = 1/n^2
 *   liap  - LIA with the penalization of slow subflows of Raiciu et al.,
 *           NSDI 2012 (penalize.h)
 *   liab  - LIA with a send hold on a slow subflow whose data would block
 *           the receive window (hold.h)
 *
 * Upstream MPTCP has no coupled congestion control: every subflow is an
 * ordinary TCP socket that runs the namespace's default algorithm on its
 * own.  These algorithms couple the subflows of one MPTCP connection through
 * a BPF hash map keyed by the connection token:
 *
 *   - a subflow finds its connection lazily (first cong_avoid with a token)
 *     through icsk_ulp_data, which for an MPTCP subflow points to its
 *     struct mptcp_subflow_context (read with bpf_rdonly_cast, because
 *     bpf_skc_to_mptcp_sock is refused in struct_ops programs);
 *   - it claims one of MAX_SF slots of the connection's map value with an
 *     atomic compare-and-swap, and writes its window, RTT (and for OLIA its
 *     inter-loss distance) into it on every ACK and on every loss/state
 *     change;
 *   - in congestion avoidance it reads all slots to compute its coupled
 *     increase;
 *   - .release frees the slot and deletes the map entry with the last slot.
 *
 * A plain TCP socket, a subflow whose connection is not known yet, and a
 * connection with a single (measured) subflow all behave exactly as Reno.
 * Loss response (ssthresh = cwnd/2) and undo are Reno's, for all three.
 *
 * Only integer arithmetic is used; the exact formulas (so that they can be
 * unit-tested) are in README.md next to this file.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

char _license[] SEC("license") = "GPL";

/* #defines are not in vmlinux.h */
#define TCP_CONG_NON_RESTRICTED 0x1	/* include/net/tcp.h */
#define BPF_NOEXIST 1			/* include/uapi/linux/bpf.h */

/* Kernel functions a tcp_congestion_ops program may call (bpf_tcp_ca.c). */
extern __u32 tcp_reno_ssthresh(struct sock *sk) __ksym;
extern void tcp_reno_cong_avoid(struct sock *sk, __u32 ack, __u32 acked) __ksym;
extern __u32 tcp_reno_undo_cwnd(struct sock *sk) __ksym;
extern __u32 tcp_slow_start(struct tcp_sock *tp, __u32 acked) __ksym;
extern void tcp_cong_avoid_ai(struct tcp_sock *tp, __u32 w, __u32 acked) __ksym;
/* Generic kfunc: reinterpret a kernel pointer as a read-only (probe-read)
 * pointer to the given BTF type. */
extern void *bpf_rdonly_cast(const void *obj, __u32 btf_id) __ksym;

#define MAX_SF		8		/* subflow slots per connection */
#define W_CAP		(1U << 20)	/* windows are capped here for the math */
#define RTT_CAP		(1U << 24)	/* RTTs (us) are capped here (16.7 s) */
#define ONE_FP32	(1LL << 32)	/* 1 packet in OLIA's accumulator units */

enum { ALGO_LIA, ALGO_OLIA, ALGO_EWTCP, ALGO_LIA_P, ALGO_LIA_B };

#include "repair_log.h"

/* One subflow's published state.  Written only by its owner; read by the
 * connection's other subflows without locking (a torn read only makes one
 * increase slightly stale, never unsafe). */
struct sf_slot {
	__u32 owner;	/* 0 = free, else the owner's random id (cmpxchg) */
	__u32 cwnd;	/* packets; ssthresh while in Recovery/CWR */
	__u32 rtt_us;	/* srtt in us (>= 1); 0 = no RTT sample yet */
	__u32 loss_dist;/* OLIA l_r in bytes (0 for lia/ewtcp) */
};

struct conn_state {
	struct sf_slot s[MAX_SF];
};

/* token (u32) -> slots of that MPTCP connection's subflows */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 8192);
	__type(key, __u32);
	__type(value, struct conn_state);
} mptcp_cc_conns SEC(".maps");

/* Per-subflow private state in inet_csk_ca(sk) (icsk_ca_priv, 104 bytes;
 * this is 32).  The kernel zeroes the area whenever it (re)assigns an
 * algorithm to a socket, so "all zero" means "nothing claimed yet". */
struct cc_priv {
	__u32 token;	/* MPTCP connection token, 0 = not known (yet) */
	__u32 sid;	/* random non-zero id, owner tag of our slot */
	__u8  slot;	/* 1 + index of our slot, 0 = no slot */
	__u8  plain;	/* 1 = not an MPTCP subflow: Reno, stop looking */
	__u8  held;	/* liab: 1 while our pacing rate is capped at 0 (hold.h) */
	__u8  pad;
	__u32 loss1;	/* OLIA: snd_una at the loss before the last one */
	__u32 loss2;	/* OLIA: snd_una at the last loss */
	__u32 loss3;	/* OLIA: snd_una now (updated on every ACK) */
	__s64 acc;	/* OLIA: pending window change, units of 2^-32 pkt */
	__u32 sane_cwnd;/* last window seen below W_CAP (see repair_window) */
	struct hook_snapshot last;	/* after our last callback (repair_log.h) */
	__u64 penalized_us;	/* liap: tcp_mstamp of the last penalty (penalize.h) */
};

_Static_assert(sizeof(struct cc_priv) <= 104, "cc_priv exceeds icsk_ca_priv");

/* Windows this program found corrupted and repaired (see repair_window);
 * the harness reads it from the object's .bss map before and after a run. */
__u64 window_repairs = 0;

static __always_inline struct tcp_sock *tcp_sk(const struct sock *sk)
{
	return (struct tcp_sock *)sk;
}

static __always_inline struct inet_connection_sock *inet_csk(const struct sock *sk)
{
	return (struct inet_connection_sock *)sk;
}

static __always_inline struct cc_priv *inet_csk_ca(const struct sock *sk)
{
	return (struct cc_priv *)inet_csk(sk)->icsk_ca_priv;
}

static __always_inline bool tcp_in_slow_start(const struct tcp_sock *tp)
{
	return tp->snd_cwnd < tp->snd_ssthresh;
}

/* Same as the kernel's tcp_is_cwnd_limited() (include/net/tcp.h). */
static __always_inline bool tcp_is_cwnd_limited(const struct sock *sk)
{
	const struct tcp_sock *tp = tcp_sk(sk);

	/* If in slow start, ensure cwnd grows to twice what was ACKed. */
	if (tcp_in_slow_start(tp))
		return tp->snd_cwnd < 2 * tp->max_packets_out;
	return !!BPF_CORE_READ_BITFIELD(tp, is_cwnd_limited);
}

static __always_inline __u32 min_u32(__u32 a, __u32 b) { return a < b ? a : b; }
static __always_inline __u32 max_u32(__u32 a, __u32 b) { return a > b ? a : b; }

/* The window other subflows should see.  During Recovery/CWR the kernel
 * shrinks cwnd towards ssthresh gradually (PRR); the target ssthresh is what
 * the window "is" for coupling purposes (as mptcp_get_crt_cwnd() in the
 * out-of-tree OLIA).  Capped to [1, W_CAP] so the fixed-point math cannot
 * overflow. */
static __always_inline __u32 crt_cwnd(const struct sock *sk, __u8 ca_state)
{
	const struct tcp_sock *tp = tcp_sk(sk);
	__u32 w;

	if (ca_state == TCP_CA_Recovery || ca_state == TCP_CA_CWR)
		w = tp->snd_ssthresh;
	else
		w = tp->snd_cwnd;
	return max_u32(min_u32(w, W_CAP), 1);
}

#define INFINITE_SSTHRESH 0x7fffffffU

/* On this kernel (6.18) a subflow running one of these algorithms now and
 * then gets, as it enters Recovery, CWR or Loss, an ssthresh that none of
 * our programs computed: the kernel called our ssthresh (or undo_cwnd)
 * member, our program did not run (its snapshot is missing, and the
 * program's run_cnt falls short of the kernel's calls), and the value
 * taken is a stale stack word (0x81104110 on the machine measured: the
 * SRSO return thunk's return address). Proportional rate reduction then
 * scales that ssthresh into a window of hundreds of millions of packets,
 * which lets the subflow send whatever it has: it overflows its queues and
 * stalls its connection. kernel/bpf/README.md ("Corrupted windows: what
 * causes them") has the measurements and a reproduction. A kernel fault;
 * until it is fixed we repair what we can reach. A callback that does not
 * run cannot repair, so the value lives until our next callback; so at
 * every ACK (in_ack_event runs before the kernel's own window updates) and
 * in every other callback:
 *   - in CWR or Recovery an infinite ssthresh is set to the current window
 *     (an undone reduction reduces nothing);
 *   - a window or ssthresh beyond W_CAP (2^20 packets, 1.5 GB: no real
 *     window comes near it) is put back to the last sane window (ssthresh
 *     to half of it, as after a loss);
 * and each repair is counted and recorded. `acked` is cong_avoid's
 * argument, or set_state's new state. */
static __always_inline void repair_window(struct sock *sk, __u8 hook, __u32 acked)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct cc_priv *ca = inet_csk_ca(sk);
	__u32 sane = ca->sane_cwnd ? ca->sane_cwnd : 10;
	__u8 state = BPF_CORE_READ_BITFIELD(inet_csk(sk), icsk_ca_state);
	__u8 kind = 0;

	if (tp->snd_cwnd > W_CAP)
		kind |= KIND_CWND_OVER_CAP;
	if (tp->snd_ssthresh == INFINITE_SSTHRESH &&
	    (state == TCP_CA_CWR || state == TCP_CA_Recovery))
		kind |= KIND_INFINITE_SSTHRESH;
	else if (tp->snd_ssthresh > W_CAP && tp->snd_ssthresh != INFINITE_SSTHRESH)
		kind |= KIND_SSTHRESH_OVER_CAP;
	if (kind)
		log_corrupted(sk, tp, ca->token, hook, kind, state, acked, &ca->last);

	if (kind & KIND_CWND_OVER_CAP)
		tp->snd_cwnd = sane;
	if (kind & KIND_INFINITE_SSTHRESH)
		tp->snd_ssthresh = max_u32(tp->snd_cwnd, 2);
	else if (kind & KIND_SSTHRESH_OVER_CAP)
		tp->snd_ssthresh = max_u32(sane >> 1, 2);
	if (kind)
		__sync_fetch_and_add(&window_repairs, 1);
	else
		ca->sane_cwnd = tp->snd_cwnd;
	take_snapshot(tp, &ca->last, hook, state, acked);
}

/* smoothed RTT in microseconds (tp->srtt_us is <<3), floored at 1 and
 * capped at RTT_CAP; 0 means "no RTT sample yet". */
static __always_inline __u32 srtt_us(const struct tcp_sock *tp)
{
	__u32 srtt = tp->srtt_us;

	if (!srtt)
		return 0;
	return max_u32(min_u32(srtt >> 3, RTT_CAP), 1);
}

/* OLIA l_r = max(bytes acked since the last loss, bytes acked between the
 * last two losses) (out-of-tree mptcp_olia.c: max(loss3-loss2, loss2-loss1)). */
static __always_inline __u32 olia_loss_dist(const struct cc_priv *ca)
{
	return max_u32(ca->loss3 - ca->loss2, ca->loss2 - ca->loss1);
}

/* ------------------------------------------------------------------------
 * Finding the MPTCP connection
 */

/* The MPTCP subflow context of sk (an untrusted, read-only pointer), or
 * NULL if sk is not (yet) an MPTCP subflow; a plain TCP socket is marked
 * so in ca and never looked at again. */
static __always_inline struct mptcp_subflow_context *subflow_ctx(struct sock *sk,
								  struct cc_priv *ca)
{
	struct inet_connection_sock *icsk = inet_csk(sk);
	const struct tcp_ulp_ops *ulp;
	struct mptcp_subflow_context *sf;
	void *ulp_data;

	/* tcp_sock.is_mptcp is set on every MPTCP subflow and never on a
	 * plain TCP socket: if it is clear this socket never couples. */
	if (!BPF_CORE_READ_BITFIELD(tcp_sk(sk), is_mptcp)) {
		ca->plain = 1;
		return NULL;
	}
	/* Only trust icsk_ulp_data if the ULP really is "mptcp". */
	ulp = icsk->icsk_ulp_ops;
	if (!ulp)
		return NULL;
	if (ulp->name[0] != 'm' || ulp->name[1] != 'p' || ulp->name[2] != 't' ||
	    ulp->name[3] != 'c' || ulp->name[4] != 'p' || ulp->name[5] != 0)
		return NULL;
	/* icsk_ulp_data is a void *: the verifier sees a scalar, which
	 * bpf_rdonly_cast turns into an untrusted (probe-read) pointer. */
	ulp_data = icsk->icsk_ulp_data;
	if (!ulp_data)
		return NULL;
	sf = bpf_rdonly_cast(ulp_data,
			     bpf_core_type_id_kernel(struct mptcp_subflow_context));
	/* back-pointer sanity check: the context must belong to this socket */
	if ((void *)sf->tcp_sock != (void *)sk)
		return NULL;
	return sf;
}

/* Token of the MPTCP connection sk is a subflow of, 0 if none (yet). */
static __always_inline __u32 resolve_token(struct sock *sk, struct cc_priv *ca)
{
	struct mptcp_subflow_context *sf = subflow_ctx(sk, ca);

	return sf ? sf->token : 0;
}

/* The MPTCP connection sk is a subflow of (an untrusted, read-only
 * pointer), or NULL if none (yet). */
static __always_inline struct mptcp_sock *conn_of(struct sock *sk, struct cc_priv *ca)
{
	struct mptcp_subflow_context *sf = subflow_ctx(sk, ca);

	if (!sf || !sf->conn)
		return NULL;
	return bpf_rdonly_cast(sf->conn, bpf_core_type_id_kernel(struct mptcp_sock));
}

#include "penalize.h"
#include "hold.h"

/* Slot pointer for our own slot, or NULL if we hold none in cs. */
static __always_inline struct sf_slot *own_slot(struct conn_state *cs,
						 const struct cc_priv *ca)
{
	__u32 idx;

	if (!ca->slot)
		return NULL;
	idx = ca->slot - 1;
	if (idx >= MAX_SF)
		return NULL;
	if (cs->s[idx].owner != ca->sid)
		return NULL;
	return &cs->s[idx];
}

/* Find (and if needed create) the connection entry and claim a slot in it.
 * Returns NULL when sk is not (yet) a subflow of a known connection. */
static __always_inline struct conn_state *attach_conn(struct sock *sk,
						       struct cc_priv *ca)
{
	struct conn_state *cs;
	__u32 token = ca->token;
	int i;

	if (!token) {
		if (ca->plain)
			return NULL;
		token = resolve_token(sk, ca);
		if (!token)
			return NULL;	/* retried on the next ACK */
		ca->token = token;
		ca->slot = 0;
	}
	if (!ca->sid)
		ca->sid = bpf_get_prandom_u32() | 1;

	cs = bpf_map_lookup_elem(&mptcp_cc_conns, &token);
	if (!cs) {
		/* First subflow of the connection (or the entry was deleted
		 * by a racing .release of the previous last subflow). */
		struct conn_state zero = {};

		bpf_map_update_elem(&mptcp_cc_conns, &token, &zero, BPF_NOEXIST);
		cs = bpf_map_lookup_elem(&mptcp_cc_conns, &token);
		if (!cs)
			return NULL;	/* map full: behave as Reno */
		ca->slot = 0;
	}
	if (own_slot(cs, ca))
		return cs;

	/* Claim the first free slot; cmpxchg makes concurrent claims by
	 * subflows running on other CPUs safe. */
	ca->slot = 0;
#pragma unroll
	for (i = 0; i < MAX_SF; i++) {
		if (cs->s[i].owner)
			continue;
		if (__sync_val_compare_and_swap(&cs->s[i].owner, 0, ca->sid) == 0) {
			/* invisible to the others until the first publish */
			cs->s[i].rtt_us = 0;
			ca->slot = i + 1;
			break;
		}
	}
	/* All slots taken: we still couple with the others, unpublished. */
	return cs;
}

/* Release our slot; delete the entry when no slot is left. */
static __always_inline void detach_conn(struct sock *sk)
{
	struct cc_priv *ca = inet_csk_ca(sk);
	struct conn_state *cs;
	struct sf_slot *s;
	__u32 token = ca->token;
	int i;

	/* .release is also called on the MPTCP socket itself, which is not a
	 * tcp_sock (mptcp_ca_reset() looks the default algorithm up that
	 * way); its private area is zero.  So touch nothing but the private
	 * area before checking it. */
	if (!token || !ca->slot)
		return;
	cs = bpf_map_lookup_elem(&mptcp_cc_conns, &token);
	if (cs) {
		s = own_slot(cs, ca);
		if (s) {
			s->rtt_us = 0;	/* hide it before freeing it */
			__sync_val_compare_and_swap(&s->owner, ca->sid, 0);
		}
	}
	ca->slot = 0;
	ca->token = 0;
	if (!cs)
		return;
#pragma unroll
	for (i = 0; i < MAX_SF; i++)
		if (cs->s[i].owner)
			return;
	/* Last one out.  A subflow claiming a slot concurrently would find
	 * the entry gone on its next ACK and simply re-create it. */
	bpf_map_delete_elem(&mptcp_cc_conns, &token);
}

/* Connection entry for a subflow that already holds a slot (no creation). */
static __always_inline struct conn_state *lookup_own(const struct cc_priv *ca)
{
	__u32 token = ca->token;

	if (!token || !ca->slot)
		return NULL;
	return bpf_map_lookup_elem(&mptcp_cc_conns, &token);
}

static __always_inline void publish(struct conn_state *cs, const struct cc_priv *ca,
				    __u32 w, __u32 rtt, __u32 l)
{
	struct sf_slot *s = own_slot(cs, ca);

	if (!s)
		return;
	s->cwnd = w;
	s->loss_dist = l;
	s->rtt_us = rtt;
}

/* ------------------------------------------------------------------------
 * Snapshot of the connection's subflows
 *
 * Verifier note: whether a slot counts must NOT be decided by branches here.
 * With a branch per slot the verifier tracks "counted" as an exact constant
 * on each path, and as later code branches on the count it cannot merge the
 * paths: 2^8 combinations per loop, over its 1M-instruction limit.  So the
 * slot values are masked arithmetically (nz() below) and the verifier just
 * sees unknown numbers.
 */

/* 1 if x != 0, else 0, without a branch.  barrier_var() stops clang from
 * turning it back into a compare-and-branch. */
static __always_inline __u64 nz(__u64 x)
{
	__u64 t = x | (0 - x);

	barrier_var(t);
	return t >> 63;
}

struct path_view {
	/* the other subflows, slot order; entries that do not count have
	 * w = 0, r = 1, l = 0, vb = 0 (so they add nothing to any sum and can
	 * never be a maximum) */
	__u32 w[MAX_SF];
	__u32 r[MAX_SF];
	__u32 l[MAX_SF];
	__u32 vb[MAX_SF];	/* 1: counted */
	/* ourselves, always counted, fresh values (not the slot) */
	__u32 own_w, own_r, own_l;
	__u32 n;		/* counted subflows, including ourselves */
};

/* Verifier note 2: the math below is in global (non-inlined) functions.
 * The verifier checks a global function once, on its own, with unknown
 * arguments, so its internal branches do not multiply with the caller's
 * paths (all inlined, one program exceeded the 1M-instruction budget).
 * Pointer arguments of global functions may be NULL as far as the verifier
 * knows, hence the checks.  Callers only use their return values. */

/* Fill v from the slots (v->own_* are set by the caller); returns n, the
 * number of counted subflows including ourselves.  A slot counts when it is
 * owned, has an RTT sample and is not our own (own_idx: our slot index, or
 * ~0 when we hold no slot). */
__noinline __u32 mptcp_cc_gather(const struct conn_state *cs, __u32 own_idx,
				 struct path_view *v)
{
	__u32 n = 1;
	int i;

	if (!cs || !v)
		return 1;

#pragma unroll
	for (i = 0; i < MAX_SF; i++) {
		const struct sf_slot *s = &cs->s[i];
		__u32 w = s->cwnd, r = s->rtt_us, l = s->loss_dist;
		__u32 vb = nz(s->owner) & nz(r) & nz((__u32)i ^ own_idx);
		__u32 mask = 0 - vb;

		v->w[i] = max_u32(min_u32(w, W_CAP), 1) & mask;
		v->r[i] = (min_u32(r, RTT_CAP) & mask) | (vb ^ 1);
		v->l[i] = l & mask;
		v->vb[i] = vb;
		n += vb;
	}
	v->n = n;
	return n;
}

/* floor(T^2 / (d * 2^k)) for k in {16, 32}, d >= 1, saturating at 2^64-1.
 * Exact when T < 2^32; for larger T, T is first shifted right until it fits
 * in 32 bits (keeping >= 31 significant bits). */
static __always_inline __u64 sq_div(__u64 T, __u32 d, __u32 k)
{
	__u32 s = 0;
	__u64 x;

	if (T >> 48) { T >>= 16; s += 16; }
	if (T >> 40) { T >>= 8;  s += 8; }
	if (T >> 36) { T >>= 4;  s += 4; }
	if (T >> 34) { T >>= 2;  s += 2; }
	if (T >> 33) { T >>= 1;  s += 1; }
	if (T >> 32) { T >>= 1;  s += 1; }
	x = T * T / d;
	s *= 2;				/* x = T_orig^2 / d / 2^s */
	if (s <= k)
		return x >> (k - s);
	s -= k;
	if (s >= 64 || x > (~0ULL >> s))
		return ~0ULL;
	return x << s;
}

/* 2^16 * R * sum_k w_k/r_k  =  sum_k (w_k << 16) * R / r_k over all counted
 * subflows (fits: w <= 2^20, R <= 2^24 -> each term < 2^61, 9 terms) */
static __always_inline __u64 rate_sum(const struct path_view *v, __u32 R)
{
	__u64 T = (((__u64)v->own_w << 16) * R) / v->own_r;
	int i;

#pragma unroll
	for (i = 0; i < MAX_SF; i++)
		T += (((__u64)v->w[i] << 16) * R) / v->r[i];
	return T;
}

/* w/r^2 in fixed point (w <= 2^20, so w << 43 fits in 64 bits) */
static __always_inline __u64 lia_key(__u32 w, __u32 r)
{
	return ((__u64)w << 43) / r / r;
}

/* LIA: ACKs per +1 packet for our subflow (RFC 6356 section 3):
 *   per ACK  cwnd_i += min(alpha / cwnd_total, 1 / cwnd_i)
 *   alpha / cwnd_total = max_k(w_k/r_k^2) / (sum_k w_k/r_k)^2
 * With b = argmax_k w_k/r_k^2 and R = r_b, multiplying through by R^2:
 *   cnt = max(cwnd_i, (sum_k w_k * R/r_k)^2 / w_b)
 * (same normalisation as the out-of-tree mptcp_coupled.c). */
__noinline __u32 mptcp_cc_lia_cnt(const struct path_view *v)
{
	__u64 best_key, key, T, cnt;
	__u32 wb, R;
	int i;

	if (!v)
		return 0xffffffff;
	best_key = lia_key(v->own_w, v->own_r);
	wb = v->own_w;
	R = v->own_r;

	/* b: ourselves unless another subflow has a strictly larger key (the
	 * first such in slot order); non-counted entries have key 0 */
#pragma unroll
	for (i = 0; i < MAX_SF; i++) {
		key = lia_key(v->w[i], v->r[i]);
		if (key > best_key) {
			best_key = key;
			wb = v->w[i];
			R = v->r[i];
		}
	}
	T = rate_sum(v, R);		/* 2^16 * sum_k w_k R / r_k */
	cnt = sq_div(T, wb, 32);	/* T^2 / 2^32 / w_b */
	if (cnt < v->own_w)
		cnt = v->own_w;
	if (cnt > 0xffffffffULL)
		cnt = 0xffffffffULL;
	return cnt;
}

/* l/r^2 in fixed point (l < 2^32) */
static __always_inline __u64 olia_key(__u32 l, __u32 r)
{
	return ((__u64)l << 32) / r / r;
}

/* OLIA: signed window change per ACKed packet on our path r, in units of
 * 2^-32 packet (Khalili et al., ToN 2013, section V; draft-khalili-mptcp-
 * congestion-control-05 section 3):
 *
 *   w_r += (w_r/rtt_r^2) / (sum_p w_p/rtt_p)^2  +  alpha_r / w_r
 *
 * With T_r = sum_p w_p * rtt_r/rtt_p the first term is w_r / T_r^2.
 * alpha_r:  1/(n*|B\M|) if r in B\M;  -1/(n*|M|) if r in M and B\M != {};
 * else 0.  M = paths with the largest window; B = "presumably best" paths,
 * those maximising l_p/rtt_p^2, where l_p = max(bytes between the last two
 * losses, bytes since the last loss).  l/rtt^2 is what the designers' own
 * kernel implementation compares (multipath-tcp.org net/mptcp/mptcp_olia.c,
 * mptcp_get_epsilon(): tmp_int * best_rtt >= best_int * tmp_rtt with
 * tmp_rtt = srtt^2); it ranks paths by the rate a single-path TCP would get
 * there (~ sqrt(l)/rtt).  The comparison key is floor(l * 2^32 / rtt^2). */
__noinline __s64 mptcp_cc_olia_inc(const struct path_view *v)
{
	__u64 own_key, best_key, key, T, q16, term1, in_m, in_b, own_in_m, own_in_b;
	__u32 w_max, nM, nBM;
	__s64 inc;
	int i;

	if (!v)
		return 0;
	own_key = olia_key(v->own_l, v->own_r);
	best_key = own_key;
	w_max = v->own_w;

	/* non-counted entries have w = 0 and key 0: never a maximum */
#pragma unroll
	for (i = 0; i < MAX_SF; i++) {
		if (v->w[i] > w_max)
			w_max = v->w[i];
		key = olia_key(v->l[i], v->r[i]);
		if (key > best_key)
			best_key = key;
	}
	/* |M| and |B\M|, counted without branches (see gather()) */
	own_in_m = 1 - nz(v->own_w ^ w_max);
	own_in_b = 1 - nz(own_key ^ best_key);
	nM = own_in_m;
	nBM = own_in_b & (own_in_m ^ 1);
#pragma unroll
	for (i = 0; i < MAX_SF; i++) {
		in_m = v->vb[i] & (1 - nz(v->w[i] ^ w_max));
		in_b = v->vb[i] & (1 - nz(olia_key(v->l[i], v->r[i]) ^ best_key));
		nM += in_m;
		nBM += in_b & (in_m ^ 1);
	}

	/* first term: w_r / T_r^2 = 1 / q, q = T_r^2 / w_r >= w_r >= 1 */
	T = rate_sum(v, v->own_r);		/* 2^16 * T_r */
	q16 = sq_div(T, v->own_w, 16);		/* 2^16 * T_r^2 / w_r */
	term1 = q16 ? (1ULL << 48) / q16 : 0;
	inc = (__s64)term1;

	/* second term: alpha_r / w_r */
	if (nBM && own_in_b && !own_in_m)
		inc += (__s64)((1ULL << 32) / ((__u64)v->n * nBM * v->own_w));
	else if (nBM && own_in_m)
		inc -= (__s64)((1ULL << 32) / ((__u64)v->n * nM * v->own_w));
	return inc;
}

/* ------------------------------------------------------------------------
 * The callbacks, shared by the three algorithms (algo is a compile-time
 * constant in each caller, so each program only contains its own code).
 */

static __always_inline void cc_init(struct sock *sk, int algo)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct cc_priv *ca = inet_csk_ca(sk);

	ca->token = 0;
	ca->slot = 0;
	ca->plain = 0;
	ca->sid = bpf_get_prandom_u32() | 1;
	ca->loss1 = ca->loss2 = ca->loss3 = tp->snd_una;
	ca->acc = 0;
}

static __always_inline void cong_avoid_body(struct sock *sk, __u32 ack, __u32 acked,
					    int algo)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct cc_priv *ca = inet_csk_ca(sk);
	struct conn_state *cs;
	struct path_view v;
	__u32 own_w, own_r, own_l = 0, n;

	repair_window(sk, HOOK_CONG_AVOID, acked);
	if (algo == ALGO_OLIA)
		ca->loss3 = tp->snd_una;

	cs = attach_conn(sk, ca);
	if (!cs) {
		tcp_reno_cong_avoid(sk, ack, acked);
		return;
	}

	/* Publish our state on every ACK, whether or not we grow. */
	own_r = srtt_us(tp);
	if (algo == ALGO_OLIA)
		own_l = olia_loss_dist(ca);
	publish(cs, ca, crt_cwnd(sk, BPF_CORE_READ_BITFIELD(inet_csk(sk), icsk_ca_state)),
		own_r, own_l);

	/* liab: a slow subflow whose data would block the receive window
	 * takes no new data, and one close to it stops growing (hold.h). */
	if (algo == ALGO_LIA_B && hold_update(sk, ca, cs, own_r) != HOLD_NONE)
		return;
	/* liap: a slow subflow holding up a window-limited connection
	 * gives up half its window instead of growing (penalize.h). */
	if (algo == ALGO_LIA_P && penalize_if_holding(sk, ca, cs, own_r))
		return;
	if (!tcp_is_cwnd_limited(sk))
		return;
	if (tcp_in_slow_start(tp)) {
		acked = tcp_slow_start(tp, acked);
		if (!acked)
			return;
	}

	if (!own_r) {
		/* no RTT sample yet: Reno */
		tcp_cong_avoid_ai(tp, tp->snd_cwnd, acked);
		return;
	}
	own_w = max_u32(min_u32(tp->snd_cwnd, W_CAP), 1);
	/* (v must be initialised before it is passed to a global function) */
	__builtin_memset(&v, 0, sizeof(v));
	v.own_w = own_w;
	v.own_r = own_r;
	v.own_l = own_l;
	n = mptcp_cc_gather(cs, (__u32)ca->slot - 1, &v);
	if (n <= 1) {
		/* alone: Reno */
		tcp_cong_avoid_ai(tp, tp->snd_cwnd, acked);
		return;
	}

	if (algo == ALGO_LIA || algo == ALGO_LIA_P || algo == ALGO_LIA_B) {
		tcp_cong_avoid_ai(tp, mptcp_cc_lia_cnt(&v), acked);
	} else if (algo == ALGO_EWTCP) {
		/* a = 1/n^2: +1 packet per n^2 * cwnd ACKed packets */
		__u64 cnt = (__u64)n * n * own_w;

		if (cnt > 0xffffffffULL)
			cnt = 0xffffffffULL;
		tcp_cong_avoid_ai(tp, cnt, acked);
	} else {
		/* OLIA: accumulate the signed per-ACK change, apply whole
		 * packets, keep the remainder; never below 1 packet. */
		__s64 acc = ca->acc + mptcp_cc_olia_inc(&v) * (__s64)acked;
		__u64 cwnd = tp->snd_cwnd, d;

		if (acc >= ONE_FP32) {
			d = (__u64)acc >> 32;
			cwnd += d;
			acc -= (__s64)(d << 32);
		} else if (acc <= -ONE_FP32) {
			d = (__u64)(-acc) >> 32;
			cwnd = cwnd > d + 1 ? cwnd - d : 1;
			acc += (__s64)(d << 32);
		}
		ca->acc = acc;
		if (cwnd > tp->snd_cwnd_clamp)
			cwnd = tp->snd_cwnd_clamp;
		tp->snd_cwnd = cwnd;
	}
}

/* cong_avoid, then a look at what it wrote: a window beyond W_CAP here was
 * written by this program (from `acked` and the coupled increase), not by
 * the kernel. It is recorded, and repaired at the next callback. */
static __always_inline void cc_cong_avoid(struct sock *sk, __u32 ack, __u32 acked, int algo)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct cc_priv *ca = inet_csk_ca(sk);
	__u8 state;

	cong_avoid_body(sk, ack, acked, algo);
	state = BPF_CORE_READ_BITFIELD(inet_csk(sk), icsk_ca_state);
	if (tp->snd_cwnd > W_CAP)
		log_corrupted(sk, tp, ca->token, HOOK_AFTER_CONG_AVOID, KIND_CWND_OVER_CAP, state,
			      acked, &ca->last);
	take_snapshot(tp, &ca->last, HOOK_AFTER_CONG_AVOID, state, acked);
}

static __always_inline __u32 cc_ssthresh(struct sock *sk, int algo)
{
	struct cc_priv *ca = inet_csk_ca(sk);
	struct conn_state *cs;
	struct sf_slot *s;
	__u32 ssthresh;

	repair_window(sk, HOOK_SSTHRESH, 0);
	ssthresh = tcp_reno_ssthresh(sk);	/* max(cwnd/2, 2) */

	if (algo == ALGO_OLIA)
		ca->acc = 0;
	/* Tell the other subflows now, not at our next ACK: our window is
	 * (about to be) ssthresh. */
	cs = lookup_own(ca);
	if (cs) {
		s = own_slot(cs, ca);
		if (s)
			s->cwnd = max_u32(min_u32(ssthresh, W_CAP), 1);
	}
	return ssthresh;
}

/* Reno's undo, max(cwnd, prior_cwnd), unless prior_cwnd is one of the
 * corrupted values repair_window() describes. */
static __always_inline __u32 cc_undo_cwnd(struct sock *sk)
{
	struct cc_priv *ca = inet_csk_ca(sk);
	__u32 cwnd;

	repair_window(sk, HOOK_UNDO_CWND, 0);
	cwnd = tcp_reno_undo_cwnd(sk);
	if (cwnd > W_CAP) {
		log_corrupted(sk, tcp_sk(sk), ca->token, HOOK_UNDO_CWND, KIND_UNDO_OVER_CAP,
			      BPF_CORE_READ_BITFIELD(inet_csk(sk), icsk_ca_state), 0, &ca->last);
		__sync_fetch_and_add(&window_repairs, 1);
		cwnd = tcp_sk(sk)->snd_cwnd;
	}
	return cwnd;
}

static __always_inline void cc_set_state(struct sock *sk, __u8 new_state, int algo)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct cc_priv *ca = inet_csk_ca(sk);
	struct conn_state *cs;

	repair_window(sk, HOOK_SET_STATE, new_state);
	/* OLIA inter-loss bookkeeping, as mptcp_olia_set_state(): a loss
	 * event closes the current inter-loss interval (unless nothing was
	 * acked since the last one, or this is a repeated RTO). */
	if (algo == ALGO_OLIA &&
	    (new_state == TCP_CA_Loss || new_state == TCP_CA_Recovery ||
	     new_state == TCP_CA_CWR)) {
		if (ca->loss3 != ca->loss2 && !inet_csk(sk)->icsk_retransmits) {
			ca->loss1 = ca->loss2;
			ca->loss2 = ca->loss3;
		}
	}
	cs = lookup_own(ca);
	if (cs)
		publish(cs, ca, crt_cwnd(sk, new_state), srtt_us(tp),
			algo == ALGO_OLIA ? olia_loss_dist(ca) : 0);
}

/* ------------------------------------------------------------------------
 * struct_ops programs.  One set per algorithm: a program is not shared
 * between struct_ops maps.
 */
#define DEFINE_CC(NAME, ALGO)							\
SEC("struct_ops/" #NAME "_init")						\
void BPF_PROG(NAME##_init, struct sock *sk)					\
{										\
	cc_init(sk, ALGO);							\
}										\
SEC("struct_ops/" #NAME "_release")						\
void BPF_PROG(NAME##_release, struct sock *sk)					\
{										\
	detach_conn(sk);							\
}										\
SEC("struct_ops/" #NAME "_cong_avoid")						\
void BPF_PROG(NAME##_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)	\
{										\
	cc_cong_avoid(sk, ack, acked, ALGO);					\
}										\
SEC("struct_ops/" #NAME "_ssthresh")						\
__u32 BPF_PROG(NAME##_ssthresh, struct sock *sk)				\
{										\
	return cc_ssthresh(sk, ALGO);						\
}										\
SEC("struct_ops/" #NAME "_set_state")						\
void BPF_PROG(NAME##_set_state, struct sock *sk, __u8 new_state)		\
{										\
	cc_set_state(sk, new_state, ALGO);					\
}										\
SEC("struct_ops/" #NAME "_in_ack_event")					\
void BPF_PROG(NAME##_in_ack_event, struct sock *sk, __u32 flags)		\
{										\
	repair_window(sk, HOOK_IN_ACK_EVENT, 0);				\
}										\
SEC("struct_ops/" #NAME "_undo_cwnd")						\
__u32 BPF_PROG(NAME##_undo_cwnd, struct sock *sk)				\
{										\
	return cc_undo_cwnd(sk);						\
}										\
SEC(".struct_ops")								\
struct tcp_congestion_ops NAME = {						\
	.init		= (void *)NAME##_init,					\
	.release	= (void *)NAME##_release,				\
	.cong_avoid	= (void *)NAME##_cong_avoid,				\
	.ssthresh	= (void *)NAME##_ssthresh,				\
	.set_state	= (void *)NAME##_set_state,				\
	.undo_cwnd	= (void *)NAME##_undo_cwnd,				\
	.in_ack_event	= (void *)NAME##_in_ack_event,				\
	/* a non-init netns may make it its default (sysctl) */		\
	.flags		= TCP_CONG_NON_RESTRICTED,				\
	.name		= #NAME,						\
};

/* The struct_ops map names (= variable names) equal the algorithm names;
 * cc_loader relies on that to detect an already registered algorithm. */
DEFINE_CC(lia, ALGO_LIA)
DEFINE_CC(olia, ALGO_OLIA)
DEFINE_CC(ewtcp, ALGO_EWTCP)
DEFINE_CC(liap, ALGO_LIA_P)
DEFINE_CC(liab, ALGO_LIA_B)
