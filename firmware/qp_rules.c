/* The modify-QP table (IBA 10.3.1 state diagram, 11.2.5.2 attribute rules), cell by cell as
 * the Linux kernel's ib_modify_qp_is_ok() applies them: which (cur, next) pairs are valid and,
 * per QP type, which attributes each requires and allows. HCA_QPA_STATE is handled by the
 * caller (always tolerated). */
#include "firmware/fw.h"

#define S(x) HCA_QPS_##x
#define A(x) HCA_QPA_##x
/* The XRC types' optional set of RTR->RTS, RTS->RTS and SQD->RTS (the target adds
 * MIN_RNR_TIMER). */
#define CUR_ALT_ACC_MIG (A(CUR_STATE) | A(ALT_PATH) | A(ACCESS_FLAGS) | A(PATH_MIG_STATE))

struct qp_cell {
	bool valid;       /* transition allowed */
	uint32_t req[5];  /* required, indexed RC, UC, UD, XI (XRC_SEND), XT (XRC_RECV) */
	uint32_t opt[5];  /* optional, same index */
};

#define RC 0
#define UC 1
#define UD 2
#define XI 3 /* the kernel's IB_QPT_XRC_INI */
#define XT 4 /* IB_QPT_XRC_TGT */

/* What RTR->RTS and SQD->RTS allow (the same in the kernel's table). */
#define TO_RTS_OPT                                                                                 \
	{                                                                                          \
		[RC] = CUR_ALT_ACC_MIG | A(MIN_RNR_TIMER), [UC] = CUR_ALT_ACC_MIG,                 \
		[UD] = A(CUR_STATE) | A(QKEY), [XI] = CUR_ALT_ACC_MIG,                             \
		[XT] = CUR_ALT_ACC_MIG | A(MIN_RNR_TIMER),                                         \
	}

static const struct qp_cell cells[HCA_QPS_COUNT][HCA_QPS_COUNT] = {
	[S(RESET)] = {
		[S(RESET)] = { .valid = true },
		[S(INIT)] = {
			.valid = true,
			.req = {
				[RC] = A(PKEY_INDEX) | A(PORT) | A(ACCESS_FLAGS),
				[UC] = A(PKEY_INDEX) | A(PORT) | A(ACCESS_FLAGS),
				[UD] = A(PKEY_INDEX) | A(PORT) | A(QKEY),
				[XI] = A(PKEY_INDEX) | A(PORT) | A(ACCESS_FLAGS),
				[XT] = A(PKEY_INDEX) | A(PORT) | A(ACCESS_FLAGS),
			},
		},
	},
	[S(INIT)] = {
		[S(RESET)] = { .valid = true },
		[S(ERR)] = { .valid = true },
		[S(INIT)] = {
			.valid = true,
			.opt = {
				[RC] = A(PKEY_INDEX) | A(PORT) | A(ACCESS_FLAGS),
				[UC] = A(PKEY_INDEX) | A(PORT) | A(ACCESS_FLAGS),
				[UD] = A(PKEY_INDEX) | A(PORT) | A(QKEY),
				[XI] = A(PKEY_INDEX) | A(PORT) | A(ACCESS_FLAGS),
				[XT] = A(PKEY_INDEX) | A(PORT) | A(ACCESS_FLAGS),
			},
		},
		[S(RTR)] = {
			.valid = true,
			.req = {
				[RC] = A(AV) | A(PATH_MTU) | A(DEST_QPN) | A(RQ_PSN) |
				       A(MAX_DEST_RD_ATOMIC) | A(MIN_RNR_TIMER),
				[UC] = A(AV) | A(PATH_MTU) | A(DEST_QPN) | A(RQ_PSN),
				[XI] = A(AV) | A(PATH_MTU) | A(DEST_QPN) | A(RQ_PSN),
				[XT] = A(AV) | A(PATH_MTU) | A(DEST_QPN) | A(RQ_PSN) |
				       A(MAX_DEST_RD_ATOMIC) | A(MIN_RNR_TIMER),
			},
			.opt = {
				[RC] = A(ALT_PATH) | A(ACCESS_FLAGS) | A(PKEY_INDEX),
				[UC] = A(ALT_PATH) | A(ACCESS_FLAGS) | A(PKEY_INDEX),
				[UD] = A(PKEY_INDEX) | A(QKEY),
				[XI] = A(ALT_PATH) | A(ACCESS_FLAGS) | A(PKEY_INDEX),
				[XT] = A(ALT_PATH) | A(ACCESS_FLAGS) | A(PKEY_INDEX),
			},
		},
	},
	[S(RTR)] = {
		[S(RESET)] = { .valid = true },
		[S(ERR)] = { .valid = true },
		[S(RTS)] = {
			.valid = true,
			.req = {
				[RC] = A(SQ_PSN) | A(TIMEOUT) | A(RETRY_CNT) | A(RNR_RETRY) |
				       A(MAX_QP_RD_ATOMIC),
				[UC] = A(SQ_PSN),
				[UD] = A(SQ_PSN),
				[XI] = A(TIMEOUT) | A(RETRY_CNT) | A(RNR_RETRY) | A(SQ_PSN) |
				       A(MAX_QP_RD_ATOMIC),
				[XT] = A(TIMEOUT) | A(SQ_PSN),
			},
			.opt = TO_RTS_OPT,
		},
	},
	[S(RTS)] = {
		[S(RESET)] = { .valid = true },
		[S(ERR)] = { .valid = true },
		[S(RTS)] = {
			.valid = true,
			.opt = {
				[RC] = A(CUR_STATE) | A(ACCESS_FLAGS) | A(ALT_PATH) |
				       A(PATH_MIG_STATE) | A(MIN_RNR_TIMER),
				[UC] = A(CUR_STATE) | A(ACCESS_FLAGS) | A(ALT_PATH) |
				       A(PATH_MIG_STATE),
				[UD] = A(CUR_STATE) | A(QKEY),
				[XI] = CUR_ALT_ACC_MIG,
				[XT] = CUR_ALT_ACC_MIG | A(MIN_RNR_TIMER),
			},
		},
		[S(SQD)] = {
			.valid = true,
			.opt = {
				[RC] = A(EN_SQD_ASYNC_NOTIFY),
				[UC] = A(EN_SQD_ASYNC_NOTIFY),
				[UD] = A(EN_SQD_ASYNC_NOTIFY),
				[XI] = A(EN_SQD_ASYNC_NOTIFY),
				[XT] = A(EN_SQD_ASYNC_NOTIFY),
			},
		},
	},
	[S(SQD)] = {
		[S(RESET)] = { .valid = true },
		[S(ERR)] = { .valid = true },
		[S(RTS)] = {
			.valid = true,
			.opt = TO_RTS_OPT,
		},
		[S(SQD)] = {
			.valid = true,
			.opt = {
				[RC] = A(PORT) | A(AV) | A(TIMEOUT) | A(RETRY_CNT) | A(RNR_RETRY) |
				       A(MAX_QP_RD_ATOMIC) | A(MAX_DEST_RD_ATOMIC) | A(ALT_PATH) |
				       A(ACCESS_FLAGS) | A(PKEY_INDEX) | A(MIN_RNR_TIMER) |
				       A(PATH_MIG_STATE),
				[UC] = A(AV) | A(ALT_PATH) | A(ACCESS_FLAGS) | A(PKEY_INDEX) |
				       A(PATH_MIG_STATE),
				[UD] = A(PKEY_INDEX) | A(QKEY),
				[XI] = A(PORT) | A(AV) | A(TIMEOUT) | A(RETRY_CNT) | A(RNR_RETRY) |
				       A(MAX_QP_RD_ATOMIC) | A(ALT_PATH) | A(ACCESS_FLAGS) |
				       A(PKEY_INDEX) | A(PATH_MIG_STATE),
				[XT] = A(PORT) | A(AV) | A(TIMEOUT) | A(MAX_DEST_RD_ATOMIC) |
				       A(ALT_PATH) | A(ACCESS_FLAGS) | A(PKEY_INDEX) |
				       A(MIN_RNR_TIMER) | A(PATH_MIG_STATE),
			},
		},
	},
	[S(SQE)] = {
		[S(RESET)] = { .valid = true },
		[S(ERR)] = { .valid = true },
		[S(RTS)] = {
			.valid = true,
			.opt = {
				[UC] = A(CUR_STATE) | A(ACCESS_FLAGS),
				[UD] = A(CUR_STATE) | A(QKEY),
			},
		},
	},
	[S(ERR)] = {
		[S(RESET)] = { .valid = true },
		[S(ERR)] = { .valid = true },
	},
};

static int type_index(unsigned type)
{
	switch (type) {
	case HCA_QPT_RC:
		return RC;
	case HCA_QPT_UC:
		return UC;
	case HCA_QPT_UD:
		return UD;
	case HCA_QPT_XRC_SEND:
		return XI;
	case HCA_QPT_XRC_RECV:
		return XT;
	default:
		return -1;
	}
}

bool fw_qp_transition_valid(unsigned cur, unsigned next)
{
	return cur < HCA_QPS_COUNT && next < HCA_QPS_COUNT && cells[cur][next].valid;
}

uint32_t fw_qp_required(unsigned type, unsigned cur, unsigned next)
{
	int ti = type_index(type);

	return fw_qp_transition_valid(cur, next) && ti >= 0 ? cells[cur][next].req[ti] : 0;
}

uint32_t fw_qp_optional(unsigned type, unsigned cur, unsigned next)
{
	int ti = type_index(type);

	return fw_qp_transition_valid(cur, next) && ti >= 0 ? cells[cur][next].opt[ti] : 0;
}
