/* Fuzz target `frame`: raw bytes into hcasim2's port 1 as if off its link
 * (hcasim_inject_frame), where an RC, a UC and a UD QP take requests and responses. The seeds
 * (testbench/fuzz/corpus/frame/) are the frames of a real run of every operation between the
 * victims; HCASIM_FUZZ_SEEDS=DIR writes them again (docs/security.md).
 *
 * A mutated frame would almost always die at the CRC check and never reach a transport. So the
 * first byte of an input chooses: even, the rest goes as it is; odd, its LRH packet length and
 * its ICRC and VCRC are made right first (as the model's own packet builder writes them), so
 * that what the mutation changed reaches the parser, the QP lookup and the engines. */
#include "testbench/fuzz/fuzz.h"

#include "model/pkt.h"
#include "sim/hcasim.h"
#include "sim/pcap.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* hcasim3's QPs send every operation to hcasim2's (and back come the responses). */
static void seed_traffic(void)
{
	static const enum ibv_wr_opcode rc_ops[] = { IBV_WR_SEND, IBV_WR_SEND_WITH_IMM,
						     IBV_WR_RDMA_WRITE, IBV_WR_RDMA_WRITE_WITH_IMM,
						     IBV_WR_RDMA_READ, IBV_WR_ATOMIC_CMP_AND_SWP,
						     IBV_WR_ATOMIC_FETCH_AND_ADD };
	struct fz_victims *v = &fz_victim;

	for (int t = 0; t < FZ_NQPT; t++) {
		size_t nops = t == FZ_RC ? sizeof(rc_ops) / sizeof(rc_ops[0]) : t == FZ_UC ? 4 : 2;

		for (size_t i = 0; i < nops; i++) {
			struct fz_side *s = &v->b[t];
			struct ibv_sge sge = { (uintptr_t)s->buf, 1500, s->mr->lkey };
			struct ibv_send_wr w = { .wr_id = i, .sg_list = &sge, .num_sge = 1,
						 .opcode = rc_ops[i], .send_flags = IBV_SEND_SIGNALED,
						 .imm_data = 7 },
					   *bad;
			struct ibv_ah_attr aa = { .dlid = v->a[t].lid, .port_num = 1 };

			if (t == FZ_UD) {
				sge.length = 256;
				w.wr.ud.ah = ibv_create_ah(s->pd, &aa);
				w.wr.ud.remote_qpn = v->a[t].qp->qp_num;
				w.wr.ud.remote_qkey = 0x11111111u;
			} else if (w.opcode == IBV_WR_ATOMIC_CMP_AND_SWP ||
				   w.opcode == IBV_WR_ATOMIC_FETCH_AND_ADD) {
				sge.length = 8;
				w.wr.atomic.remote_addr = (uintptr_t)v->a[t].buf;
				w.wr.atomic.rkey = v->a[t].mr->rkey;
			} else {
				w.wr.rdma.remote_addr = (uintptr_t)v->a[t].buf;
				w.wr.rdma.rkey = v->a[t].mr->rkey;
			}
			if (ibv_post_send(s->qp, &w, &bad))
				fz_fail("seed traffic: post_send");
			fz_after_input();
		}
	}
}

static void write_seeds(const char *dir)
{
	char prefix[512], path[600];
	struct sim_pcap_reader *r;
	struct sim_pcap_rec rec;
	int n = 0;

	snprintf(prefix, sizeof(prefix), "%s/seed", dir);
	if (hcasim_pcap(prefix))
		fz_fail("hcasim_pcap %s", prefix);
	seed_traffic();
	hcasim_pcap(NULL);
	snprintf(path, sizeof(path), "%s.link1.pcap", prefix); /* hcasim2 <-> hcasim3 */
	if (sim_pcap_reader_open(&r, path))
		fz_fail("cannot read %s", path);
	while (sim_pcap_reader_next(r, &rec) == 1) {
		FILE *f;

		snprintf(path, sizeof(path), "%s/frame-%03d", dir, n++);
		f = fopen(path, "wb");
		/* the first byte: 1, the CRCs made right after mutation */
		if (!f || fputc(1, f) != 1 || fwrite(rec.data, 1, rec.len, f) != rec.len || fclose(f))
			fz_fail("cannot write %s", path);
	}
	sim_pcap_reader_close(r);
	snprintf(path, sizeof(path), "%s.link1.pcap", prefix);
	remove(path);
	snprintf(path, sizeof(path), "%s.link0.pcap", prefix);
	remove(path);
	fprintf(stderr, "fuzz-frame: %d seed frames in %s\n", n, dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *seeds = getenv("HCASIM_FUZZ_SEEDS");

	(void)argc, (void)argv;
	fz_setup();
	if (seeds && *seeds) {
		write_seeds(seeds);
		exit(0);
	}
	return 0;
}

/* The LRH's packet length and both CRCs of the IB frame f of len bytes, made right. */
static void fix_up(uint8_t *f, size_t len)
{
	uint32_t icrc;
	uint16_t vcrc, words = (uint16_t)((len - HM_VCRC_BYTES) / 4);

	if (len < 8 + HM_ICRC_BYTES + HM_VCRC_BYTES)
		return;
	f[4] = (uint8_t)((f[4] & 0xf8) | ((words >> 8) & 0x07));
	f[5] = (uint8_t)words;
	icrc = hm_pkt_icrc(HM_LL_IB, f, len);
	for (int i = 0; i < 4; i++)
		f[len - 6 + i] = (uint8_t)(icrc >> (8 * i));
	vcrc = hm_pkt_vcrc(f, len);
	f[len - 2] = (uint8_t)vcrc;
	f[len - 1] = (uint8_t)(vcrc >> 8);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t f[HCASIM_FRAME_MAX];

	/* An empty frame, or one larger than any port takes, is refused by the API (tested in
	 * suite bus); the rest reach the receive path. */
	if (size < 2 || size - 1 > HCASIM_FRAME_MAX)
		return -1;
	memcpy(f, data + 1, size - 1);
	if (data[0] & 1)
		fix_up(f, size - 1);
	if (hcasim_inject_frame(2, 1, f, size - 1))
		fz_fail("hcasim_inject_frame refused %zu bytes", size - 1);
	fz_after_input();
	return 0;
}
