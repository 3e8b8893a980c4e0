/* The model's signals in the wave dump (sim/waves.h, docs/waves.md): per QP, per CQ, the
 * doorbells and the QP context cache of each device, sampled after every kernel event and fed
 * from the trace, and the transactions of the blocks with an RTL twin (model/twin.h) under
 * hca<dev>.<block>.txn.*, named like the RTL's pins. Reads only: the simulation is the same
 * with and without waves. */
#ifndef MODEL_WAVES_H
#define MODEL_WAVES_H

#include "model/twin.h"
#include "sim/waves.h"

struct hm_dev;

/* The coded signals that are not a model/hw or model/twin.h value (hcasim-gendoc writes the
 * names of both for GTKWave, waves/filters/): hca<dev>.sched.txn.req_op and resp_op, which
 * call of the sched port a transaction is (the RTL's req_op), and hca<dev>.db.kind, which
 * doorbell the device took. */
enum hm_waves_sched_op { HM_WAVES_SCHED_DOORBELL = 0, HM_WAVES_SCHED_PUSH = 1, HM_WAVES_SCHED_POP = 2 };
enum hm_waves_db_kind { HM_WAVES_DB_SQ = 0, HM_WAVES_DB_RQ = 1, HM_WAVES_DB_SRQ = 2 };

/* Start feeding the open dump (sim_waves_open) from devices devs[0..n-1]; stop before they
 * are destroyed (a last sample is taken). */
int hm_waves_start(struct hm_dev *const *devs, int n);
void hm_waves_stop(void);

/* Block transactions, from the twins' port calls (model/twin.c), while sim_waves_on. */
void hm_waves_sched_db(struct hm_dev *d, const struct hm_sched_db_in *in,
		       const struct hm_sched_db_out *out);
void hm_waves_sched_push(struct hm_dev *d, const struct hm_sched_push_in *in,
			 const struct hm_sched_push_out *out);
void hm_waves_sched_pop(struct hm_dev *d, const struct hm_sched_pop_in *in,
			const struct hm_sched_pop_out *out);
void hm_waves_cqe(struct hm_dev *d, const struct hm_cqe_in *in, const struct hm_cqe_out *out);
void hm_waves_psn(struct hm_dev *d, const struct hm_psn_in *in, const struct hm_psn_out *out);
void hm_waves_resp_fe(struct hm_dev *d, const struct hm_resp_fe_in *in,
		      const struct hm_resp_fe_out *out);
void hm_waves_mkey(struct hm_dev *d, const struct hm_mkey_in *in, const struct hm_mkey_out *out);
void hm_waves_wqe_fetch(struct hm_dev *d, const struct hm_wqe_fetch_in *in,
			const struct hm_wqe_fetch_out *out);
void hm_waves_wqe_check(struct hm_dev *d, const struct hm_wqe_check_in *in,
			const struct hm_wqe_check_out *out);
void hm_waves_timers_set(struct hm_dev *d, const struct hm_timers_set_in *in,
			 const struct hm_timers_set_out *out);
void hm_waves_timers_expire(struct hm_dev *d, const struct hm_timers_expire_in *in,
			    const struct hm_timers_expire_out *out);
void hm_waves_qpc_lookup(struct hm_dev *d, const struct hm_qpc_in *in,
			 const struct hm_qpc_out *out);
void hm_waves_qpc_complete(struct hm_dev *d, const struct hm_qpc_cpl_in *in,
			   const struct hm_qpc_out *out);
void hm_waves_qpc_forget(struct hm_dev *d, const struct hm_qpc_forget_in *in,
			 const struct hm_qpc_forget_out *out);

#endif
