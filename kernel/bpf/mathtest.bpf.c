// SPDX-License-Identifier: GPL-2.0
/*
 * Test wrapper: runs the coupling math of mptcp_cc.bpf.c (the real code, not
 * a copy) on inputs passed in the context, via BPF_PROG_TEST_RUN.  Loading
 * this object creates (but never registers) the struct_ops maps.
 */
#include "mptcp_cc.bpf.c"

struct mt_ctx {
	struct conn_state cs;		/* the connection's 8 slots */
	__u32 own_idx, own_w, own_r, own_l;
	__u32 n, lia;			/* out */
	__s64 olia;			/* out */
	__u32 delay;			/* hold.h: what a byte handed to us now waits, us */
	__u32 hold;			/* out: HOLD_NONE, HOLD_FREEZE or HOLD_SEND */
	__u64 rwnd_pkts;		/* hold.h: the receive window in MSS */
};

/* in a global (map memory), not on the stack: the stack budget is shared
 * with the global functions called */
struct conn_state mt_cs;

SEC("syscall")
int mathtest(struct mt_ctx *ctx)
{
	struct path_view v;

	__builtin_memcpy(&mt_cs, &ctx->cs, sizeof(mt_cs));
	__builtin_memset(&v, 0, sizeof(v));
	v.own_w = ctx->own_w;
	v.own_r = ctx->own_r;
	v.own_l = ctx->own_l;
	ctx->n = mptcp_cc_gather(&mt_cs, ctx->own_idx, &v);
	ctx->lia = mptcp_cc_lia_cnt(&v);
	ctx->olia = mptcp_cc_olia_inc(&v);
	ctx->hold = mptcp_cc_hold_level(&mt_cs, ctx->own_idx, ctx->own_r, ctx->delay,
					 ctx->rwnd_pkts);
	return 0;
}
