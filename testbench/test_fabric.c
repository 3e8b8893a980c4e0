/* fabric: the channels that join hosts in different processes (docs/fabric.md#channels). Two
 * ends in one process and in two fork()ed processes exchange PACKETs, SYNCs and TERMINATE in
 * timestamp order through rings small enough to wrap and fill; the bytes of a slot sit where
 * SimBricks' layout puts them (timestamp at 48, owner/type at 63, length at 0, port at 2); a
 * mismatched, truncated or foreign file, a claimed side, a slot with an unknown type, a length
 * beyond the slot or a timestamp going backwards are refused with a message naming the rule.
 * Then links across the cut (sim_link_remote): with its sides in two processes a link
 * delivers what it delivers in one, at the same picosecond, faults included; a peer that never
 * comes holds nothing back and its frames are lost, one that comes and stays silent halts the
 * wait naming it; a peer that leaves holds nothing back; a late joiner starts at the time the
 * running side has reached, deterministically; two waiting hosts jump over idle time through
 * their published waits instead of creeping a latency at a time. */
#include "sim/error.h"
#include "sim/link.h"
#include "sim/shmchan.h"
#include "tb.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

static char dir[] = "/tmp/hcasim-fabric-XXXXXX";
static char path[128];

static void setup(void)
{
	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/link0.1.chan", dir);
}

static void teardown(void)
{
	tb_rm_tmpdir(dir);
}

TestSuite(fabric, .init = setup, .fini = teardown);

/* Parameters for tests: latency 100 ns, small slots, slots per ring as given. */
static struct sim_chan_params params(uint32_t slots)
{
	struct sim_chan_params p;

	sim_chan_default_params(&p, 100000);
	p.slot_bytes = 256;
	p.slots = slots;
	return p;
}

static void expect_error(int got, int want, const char *words)
{
	cr_expect_eq(got, want, "returned %d, expected %d (%s)", got, want, sim_last_error());
	cr_expect(strstr(sim_last_error(), words), "the message \"%s\" does not say \"%s\"",
		  sim_last_error(), words);
}

/* The next message must be there: type, timestamp, and for a PACKET its bytes. */
static void expect_msg(struct sim_chan *c, enum sim_chan_type type, sim_time_t ts,
		       const char *frame)
{
	struct sim_chan_msg m;
	int r = sim_chan_peek(c, &m);

	cr_assert_eq(r, 1, "peek: %d (%s)", r, sim_last_error());
	cr_expect_eq(m.type, type, "type 0x%02x, expected 0x%02x", m.type, type);
	cr_expect_eq(m.ts, ts, "timestamp %llu, expected %llu", (unsigned long long)m.ts,
		     (unsigned long long)ts);
	if (frame) {
		cr_expect_eq(m.len, strlen(frame));
		cr_expect_arr_eq(m.data, frame, strlen(frame));
	}
	sim_chan_done(c);
}

Test(fabric, packets_and_syncs_cross_both_ways_in_one_process)
{
	struct sim_chan_params p = params(8);
	struct sim_chan *a, *b;
	struct sim_chan_msg m;

	cr_assert_eq(sim_chan_create(&a, path, 0, &p), 0, "%s", sim_last_error());
	cr_expect_eq(sim_chan_peer_pid(a), 0, "nobody on side 1 yet");
	cr_assert_eq(sim_chan_attach(&b, path, 1, &p), 0, "%s", sim_last_error());
	cr_expect_eq(sim_chan_peer_pid(a), getpid());
	cr_expect_eq(sim_chan_peek(b, &m), 0, "an empty ring has nothing");
	cr_assert_eq(sim_chan_send_packet(a, 1000, 0, "hello", 5), 0);
	cr_assert_eq(sim_chan_send_sync(a, 1000), 0, "an equal timestamp is no step back");
	cr_assert_eq(sim_chan_send_sync(a, 2500), 0);
	cr_assert_eq(sim_chan_send_packet(b, 700, 0, "back", 4), 0, "directions are separate");
	cr_expect_eq(sim_chan_out_ts(a), 2500);
	cr_expect_eq(sim_chan_in_ts(b), 0, "no promise before the first message");
	expect_msg(b, SIM_CHAN_PACKET, 1000, "hello");
	cr_expect_eq(sim_chan_in_ts(b), 1000, "the promise is the last timestamp taken");
	expect_msg(b, SIM_CHAN_SYNC, 1000, NULL);
	expect_msg(b, SIM_CHAN_SYNC, 2500, NULL);
	cr_expect_eq(sim_chan_in_ts(b), 2500);
	cr_expect_eq(sim_chan_peek(b, &m), 0);
	expect_msg(a, SIM_CHAN_PACKET, 700, "back");
	cr_assert_eq(sim_chan_send_terminate(a), 0);
	expect_msg(b, SIM_CHAN_TERMINATE, SIM_TIME_NEVER, NULL);
	cr_expect_eq(sim_chan_in_ts(b), SIM_TIME_NEVER, "a peer gone promises everything");
	cr_expect_eq(sim_chan_peek(b, &m), 0, "nothing after TERMINATE");
	expect_error(sim_chan_send_sync(a, 3000), -EINVAL, "after its TERMINATE");
	sim_chan_close(b);
	cr_expect_eq(sim_chan_peer_pid(a), 0, "closing releases the side");
	cr_expect_eq(access(path, F_OK), 0, "the file stays while a side holds it");
	sim_chan_close(a);
	cr_expect_neq(access(path, F_OK), 0, "the last to leave removes it");
}

/* The raw bytes of the file: the tests read and forge slots through the documented layout. */
static uint8_t *map_raw(size_t *len)
{
	int fd = open(path, O_RDWR);
	struct stat st;
	uint8_t *m;

	cr_assert_geq(fd, 0);
	cr_assert_eq(fstat(fd, &st), 0);
	m = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	cr_assert_neq(m, MAP_FAILED);
	*len = (size_t)st.st_size;
	return m;
}

static uint64_t le(const uint8_t *b, int n)
{
	uint64_t v = 0;

	while (n--)
		v = v << 8 | b[n];
	return v;
}

Test(fabric, a_slot_is_laid_out_as_simbricks_network_messages)
{
	struct sim_chan_params p = params(4);
	struct sim_chan *a, *b;
	size_t len;
	uint8_t *raw, *r0, *r1;

	cr_assert_eq(sim_chan_create(&a, path, 0, &p), 0, "%s", sim_last_error());
	cr_assert_eq(sim_chan_attach(&b, path, 1, &p), 0, "%s", sim_last_error());
	raw = map_raw(&len);
	cr_expect_eq(len, 4096 + 2 * 4 * 256, "header page and two rings of 4 slots of 256 bytes");
	cr_expect_arr_eq(raw, "HCASIMCH", 8);
	cr_expect_eq(le(raw + 20, 4), 256, "slot_bytes at 20");
	cr_expect_eq(le(raw + 24, 4), 4, "slots at 24");
	cr_expect_eq(le(raw + 32, 8), 100000, "latency_ps at 32");
	r0 = raw + le(raw + 48, 8);
	r1 = raw + le(raw + 56, 8);
	cr_expect_eq(r0 - raw, 4096);
	cr_expect_eq(r1 - raw, 4096 + 4 * 256);

	cr_assert_eq(sim_chan_send_packet(a, 0x0102030405060708ull, 7, "abc", 3), 0);
	cr_expect_eq(le(r0, 2), 3, "len at 0");
	cr_expect_eq(r0[2], 7, "port at 2");
	cr_expect_eq(le(r0 + 48, 8), 0x0102030405060708ull, "timestamp at 48, little-endian");
	cr_expect_eq(r0[63], 0x40 | 0x80, "PACKET, owned by the consumer");
	cr_expect_arr_eq(r0 + 64, "abc", 3, "the frame after the 64-byte header");
	cr_assert_eq(sim_chan_send_sync(b, 5), 0);
	cr_expect_eq(r1[63], 0x00 | 0x80, "SYNC in ring 1, written by side 1");
	cr_expect_eq(le(r1 + 48, 8), 5);
	expect_msg(b, SIM_CHAN_PACKET, 0x0102030405060708ull, "abc");
	cr_expect_eq(r0[63], 0, "handed back: the producer's");
	cr_assert_eq(sim_chan_send_terminate(a), 0);
	cr_expect_eq(r0[256 + 63], 0x01 | 0x80, "TERMINATE in the next slot");
	cr_expect_eq(le(r0 + 256 + 48, 8), UINT64_MAX);
	munmap(raw, len);
	sim_chan_close(a);
	sim_chan_close(b);
}

Test(fabric, a_full_ring_is_eagain_until_the_peer_consumes)
{
	struct sim_chan_params p = params(4);
	struct sim_chan *a, *b;
	char f[8];

	cr_assert_eq(sim_chan_join(&a, path, 0, &p), 0, "join creates: %s", sim_last_error());
	cr_assert_eq(sim_chan_join(&b, path, 1, &p), 0, "join attaches: %s", sim_last_error());
	for (int round = 0; round < 3; round++) {
		for (int i = 0; i < 4; i++) {
			snprintf(f, sizeof(f), "f%d.%d", round, i);
			cr_assert_eq(sim_chan_send_packet(a, (sim_time_t)(round * 10 + i), 0, f,
							  strlen(f)), 0);
		}
		expect_error(sim_chan_send_sync(a, 100), -EAGAIN, "ring is full");
		for (int i = 0; i < 4; i++) {
			snprintf(f, sizeof(f), "f%d.%d", round, i);
			expect_msg(b, SIM_CHAN_PACKET, (sim_time_t)(round * 10 + i), f);
		}
	}
	sim_chan_close(a);
	sim_chan_close(b);
}

Test(fabric, a_wait_record_is_read_with_the_oldest_untaken_message)
{
	struct sim_chan_params p = params(4);
	struct sim_chan *a, *b;
	sim_time_t t, m, un;

	cr_assert_eq(sim_chan_create(&a, path, 0, &p), 0, "%s", sim_last_error());
	cr_assert_eq(sim_chan_attach(&b, path, 1, &p), 0, "%s", sim_last_error());
	cr_expect_eq(sim_chan_peer_wait(a, &t, &m, &un), 0, "no record yet");
	sim_chan_wait_publish(b, 5000, 7000);
	cr_assert_eq(sim_chan_peer_wait(a, &t, &m, &un), 1);
	cr_expect(t == 5000 && m == 7000 && un == SIM_TIME_NEVER, "t %llu m %llu unread %llu",
		  (unsigned long long)t, (unsigned long long)m, (unsigned long long)un);
	cr_expect_eq(sim_chan_peer_wait(b, &t, &m, &un), 0, "a side reads its peer's record only");
	for (int i = 1; i <= 4; i++)
		cr_assert_eq(sim_chan_send_sync(a, (sim_time_t)i * 10), 0);
	cr_assert_eq(sim_chan_peer_wait(a, &t, &m, &un), 1);
	cr_expect_eq(un, 10, "all four untaken, the ring full: the oldest is 10");
	sim_chan_wait_clear(b);
	cr_expect_eq(sim_chan_peer_wait(a, &t, &m, &un), 0, "withdrawn before taking");
	expect_msg(b, SIM_CHAN_SYNC, 10, NULL);
	expect_msg(b, SIM_CHAN_SYNC, 20, NULL);
	sim_chan_wait_publish(b, 6000, SIM_TIME_NEVER);
	cr_assert_eq(sim_chan_peer_wait(a, &t, &m, &un), 1);
	cr_expect(t == 6000 && un == 30, "t %llu unread %llu", (unsigned long long)t,
		  (unsigned long long)un);
	expect_msg(b, SIM_CHAN_SYNC, 30, NULL);
	expect_msg(b, SIM_CHAN_SYNC, 40, NULL);
	cr_assert_eq(sim_chan_peer_wait(a, &t, &m, &un), 1);
	cr_expect_eq(un, SIM_TIME_NEVER, "everything taken");
	sim_chan_close(a);
	sim_chan_close(b);
}

#define XCHG_N 3000 /* messages each way */

/* One end of the two-process exchange: send XCHG_N messages (a PACKET carrying its number,
 * every 7th a SYNC instead) then TERMINATE, while taking the peer's, which must come in
 * order with timestamps that never go back. A full ring or an empty one is waited out (30 s of
 * wall time at most). Returns 0 or a line number for the failure. */
static int exchange(struct sim_chan *c, int side)
{
	int sent = 0, got = 0, done = 0;
	sim_time_t last = 0;
	time_t t0 = time(NULL);

	while (sent <= XCHG_N || !done) {
		if (time(NULL) - t0 > 30)
			return __LINE__; /* a lost message would spin here for ever */
		struct sim_chan_msg m;
		char f[32];
		int r;

		if (sent < XCHG_N) {
			sim_time_t ts = (sim_time_t)sent * 1000 + (sim_time_t)side;

			snprintf(f, sizeof(f), "%d:%d", side, sent);
			r = sent % 7 ? sim_chan_send_packet(c, ts, 0, f, strlen(f))
				     : sim_chan_send_sync(c, ts);
			sent += r == 0;
			if (r && r != -EAGAIN)
				return __LINE__;
		} else if (sent == XCHG_N) {
			sent += sim_chan_send_terminate(c) == 0;
		}
		r = sim_chan_peek(c, &m);
		if (r < 0)
			return __LINE__;
		if (r == 0)
			continue;
		if (m.ts < last)
			return __LINE__;
		last = m.ts;
		if (m.type == SIM_CHAN_TERMINATE) {
			done = got == XCHG_N ? 1 : -1;
		} else {
			snprintf(f, sizeof(f), "%d:%d", !side, got);
			if (m.ts != (sim_time_t)got * 1000 + (sim_time_t)!side ||
			    m.type != (got % 7 ? SIM_CHAN_PACKET : SIM_CHAN_SYNC) ||
			    (m.type == SIM_CHAN_PACKET &&
			     (m.len != strlen(f) || memcmp(m.data, f, m.len))))
				return __LINE__;
			got++;
		}
		sim_chan_done(c);
	}
	return done == 1 ? 0 : __LINE__;
}

Test(fabric, two_processes_exchange_packets_and_syncs_in_timestamp_order)
{
	struct sim_chan_params p = params(8); /* small: the rings wrap and fill many times */
	struct sim_chan *c;
	pid_t pid = fork();
	int st, r;

	cr_assert_geq(pid, 0);
	if (pid == 0) {
		/* Both race to join: whichever comes first creates the file. */
		if (sim_chan_join(&c, path, 1, &p)) {
			fprintf(stderr, "child: %s\n", sim_last_error());
			_exit(100);
		}
		r = exchange(c, 1);
		if (r)
			fprintf(stderr, "child: the exchange failed at test_fabric.c:%d (%s)\n", r,
				sim_last_error());
		sim_chan_close(c);
		_exit(r ? 1 : 0);
	}
	cr_assert_eq(sim_chan_join(&c, path, 0, &p), 0, "%s", sim_last_error());
	r = exchange(c, 0);
	cr_expect_eq(r, 0, "parent: the exchange failed at test_fabric.c:%d (%s)", r,
		     sim_last_error());
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0,
		  "child: the exchange failed (status 0x%x, its message above)", st);
	sim_chan_close(c);
}

Test(fabric, parameters_out_of_range_are_refused_naming_the_field)
{
	struct sim_chan *c = (struct sim_chan *)&c;
	struct sim_chan_params p = params(8);

	p.latency_ps = 0;
	expect_error(sim_chan_create(&c, path, 0, &p), -EINVAL, "latency_ps 0");
	cr_expect_null(c, "no channel on failure");
	p = params(8);
	p.sync_interval_ps = p.latency_ps + 1;
	expect_error(sim_chan_create(&c, path, 0, &p), -EINVAL, "sync_interval_ps 100001");
	p = params(8);
	p.slot_bytes = 100;
	expect_error(sim_chan_create(&c, path, 0, &p), -EINVAL, "slot_bytes 100");
	p = params(0);
	expect_error(sim_chan_create(&c, path, 0, &p), -EINVAL, "slots 0");
	p = params(8);
	expect_error(sim_chan_create(&c, path, 2, &p), -EINVAL, "side 2");
	cr_expect_neq(access(path, F_OK), 0, "nothing was created");
	expect_error(sim_chan_attach(&c, path, 0, &p), -ENOENT, "cannot open");
}

Test(fabric, a_mismatched_or_damaged_file_is_refused_naming_the_field)
{
	struct sim_chan_params p = params(8), q;
	struct sim_chan *a, *b;
	size_t len;
	uint8_t *raw;

	cr_assert_eq(sim_chan_create(&a, path, 0, &p), 0, "%s", sim_last_error());
	expect_error(sim_chan_create(&b, path, 1, &p), -EEXIST, "File exists");
	q = p;
	q.slot_bytes = 512;
	expect_error(sim_chan_attach(&b, path, 1, &q), -EINVAL,
		     "slot_bytes is 256 in the file, 512 here");
	q = p;
	q.latency_ps = 200000;
	q.sync_interval_ps = 200000;
	expect_error(sim_chan_attach(&b, path, 1, &q), -EINVAL,
		     "latency_ps is 100000 in the file, 200000 here");
	expect_error(sim_chan_attach(&b, path, 0, &p), -EBUSY, "side 0 is held by pid");

	raw = map_raw(&len);
	raw[48]++; /* ring_off[0] */
	expect_error(sim_chan_attach(&b, path, 1, &p), -EINVAL, "ring_off[0] is 4097");
	raw[48]--;
	raw[0] = 'X';
	expect_error(sim_chan_attach(&b, path, 1, &p), -EINVAL, "magic");
	raw[0] = 'H';
	munmap(raw, len);
	cr_assert_eq(truncate(path, 4096 + 100), 0);
	expect_error(sim_chan_attach(&b, path, 1, &p), -EINVAL,
		     "truncated or grown: 4196 bytes on disk, file_bytes says 8192");
	cr_assert_eq(truncate(path, 100), 0);
	expect_error(sim_chan_attach(&b, path, 1, &p), -EINVAL, "truncated");
	sim_chan_close(a);
}

Test(fabric, a_side_left_by_a_dead_process_is_taken_over)
{
	struct sim_chan_params p = params(8);
	struct sim_chan *a, *b;
	pid_t pid;
	int st;

	cr_assert_eq(sim_chan_create(&a, path, 0, &p), 0, "%s", sim_last_error());
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0)
		_exit(sim_chan_attach(&b, path, 1, &p) ? 1 : 0); /* dies holding side 1 */
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	cr_expect_eq(sim_chan_peer_pid(a), pid, "the dead child's claim is still there");
	cr_expect_eq(sim_chan_attach(&b, path, 1, &p), 0, "a stale claim is replaced: %s",
		     sim_last_error());
	cr_expect_eq(sim_chan_peer_pid(a), getpid());
	sim_chan_close(b);
	sim_chan_close(a);
}

/* Publish a forged slot in ring 0 at index i, as a producer would. */
static void forge(uint8_t *raw, unsigned i, uint8_t type, uint16_t len, uint64_t ts)
{
	uint8_t *s = raw + 4096 + i * 256;

	memset(s, 0, 64);
	s[0] = (uint8_t)len;
	s[1] = (uint8_t)(len >> 8);
	for (int k = 0; k < 8; k++)
		s[48 + k] = (uint8_t)(ts >> (8 * k));
	__atomic_store_n(&s[63], (uint8_t)(type | 0x80), __ATOMIC_RELEASE);
}

Test(fabric, a_slot_breaking_the_protocol_is_refused_and_left_alone)
{
	struct sim_chan_params p = params(4);
	struct sim_chan *a, *b;
	struct sim_chan_msg m;
	size_t len;
	uint8_t *raw;

	cr_assert_eq(sim_chan_create(&a, path, 0, &p), 0, "%s", sim_last_error());
	cr_assert_eq(sim_chan_attach(&b, path, 1, &p), 0, "%s", sim_last_error());
	raw = map_raw(&len);
	forge(raw, 0, 0x23, 0, 10);
	expect_error(sim_chan_peek(b, &m), -EPROTO, "slot 0 from side 0: unknown type 0x23");
	expect_error(sim_chan_peek(b, &m), -EPROTO, "unknown type 0x23");
	sim_chan_done(b); /* nothing was taken: nothing to hand back */
	cr_expect_eq(raw[4096 + 63], 0x23 | 0x80, "the slot stays as it was");
	forge(raw, 0, SIM_CHAN_PACKET, 256 - 64 + 1, 10);
	expect_error(sim_chan_peek(b, &m), -EPROTO, "PACKET len 193 (1 to 192 fit the slot)");
	forge(raw, 0, SIM_CHAN_PACKET, 0, 10);
	expect_error(sim_chan_peek(b, &m), -EPROTO, "PACKET len 0");
	forge(raw, 0, SIM_CHAN_PACKET, 192, 10);
	cr_assert_eq(sim_chan_peek(b, &m), 1, "a frame filling the slot is fine");
	cr_expect_eq(m.len, 192);
	sim_chan_done(b);
	forge(raw, 1, SIM_CHAN_SYNC, 0, 9);
	expect_error(sim_chan_peek(b, &m), -EPROTO,
		     "slot 1 from side 0: timestamp 9 ps is before the previous one, 10 ps");
	cr_expect_eq(sim_chan_in_ts(b), 10, "the promise stands");
	munmap(raw, len);
	sim_chan_close(a);
	sim_chan_close(b);
}

Test(fabric, a_sender_cannot_go_back_in_time_or_overfill_a_slot)
{
	struct sim_chan_params p = params(4);
	struct sim_chan *a;
	static uint8_t big[300];

	cr_assert_eq(sim_chan_create(&a, path, 0, &p), 0, "%s", sim_last_error());
	cr_assert_eq(sim_chan_send_sync(a, 5000), 0);
	expect_error(sim_chan_send_packet(a, 4999, 0, "x", 1), -EINVAL,
		     "timestamp 4999 ps is before the last one sent, 5000 ps");
	expect_error(sim_chan_send_packet(a, 6000, 0, big, 193), -EMSGSIZE,
		     "a frame of 193 bytes (1 to 192 fit a slot)");
	expect_error(sim_chan_send_packet(a, 6000, 0, big, 0), -EINVAL, "a frame of 0 bytes");
	cr_expect_eq(sim_chan_out_ts(a), 5000, "nothing was sent");
	cr_expect_eq(sim_chan_send_packet(a, 6000, 0, big, 192), 0);
	sim_chan_close(a);
}

/* ---- A link between two processes (sim_link_remote): the same frames at the same times as
 * with both sides in one process, faults included. Side 0 sends frames of its own and side 1
 * echoes each one it receives intact; side 1 sends its own too. */

#define LX_MAX 256
#define LX_END (12 * SIM_PS_PER_MS)

/* What one side received. */
struct lx_log {
	int n;
	sim_time_t at[LX_MAX];
	uint32_t len[LX_MAX], crc[LX_MAX]; /* length, CRC-32 of the bytes */
	bool fcs_ok[LX_MAX];
};

static struct {
	struct sim_link *l;
	struct lx_log log[2];
} LX;
static enum sim_link_kind lx_kind = SIM_LINK_ETH; /* of the scenario's link */
static uint64_t lx_seed; /* 0: the fixed send times below; else pseudo-random ones */

/* A send time for frame i of side under lx_seed: bursts and gaps of up to 2 ms, anywhere in
 * the first 10 ms (a 64-bit LCG, so both processes draw the same). */
static sim_time_t lx_random_at(int side, int i)
{
	uint64_t x = lx_seed * 6364136223846793005ull + (uint64_t)(i * 2 + side) * 1442695040888963407ull;

	for (int k = 0; k < 3; k++)
		x = x * 6364136223846793005ull + 1442695040888963407ull;
	return (x >> 11) % 5 ? (x >> 20) % (3 * SIM_PS_PER_US) + (sim_time_t)i * 40000
			     : (x >> 20) % (10 * SIM_PS_PER_MS);
}

static void lx_rx(void *port, const uint8_t *frame, size_t len, bool fcs_ok, bool crc_pending)
{
	struct lx_log *g = port;
	int side = g == &LX.log[1];

	(void)crc_pending; /* the test sends sealed frames of its own */

	if (g->n < LX_MAX) {
		g->at[g->n] = sim_now(sim_kernel());
		g->len[g->n] = (uint32_t)len;
		g->crc[g->n] = (uint32_t)crc32(0, frame, (uInt)len);
		g->fcs_ok[g->n++] = fcs_ok;
	}
	if (side == 1 && fcs_ok && frame[0] == 0xa0) {
		uint8_t echo[2048];

		memcpy(echo, frame, len);
		echo[0] = 0xb0;
		sim_link_send(LX.l, 1, echo, len);
	}
}

/* Frame i of side (first byte 0xa0 from side 0, 0xc0 from side 1), sent at its time. */
static void lx_send(void *arg)
{
	uintptr_t v = (uintptr_t)arg;
	int side = (int)(v & 1), i = (int)(v >> 1);
	uint8_t f[2048];
	size_t len = 64 + (size_t)(i * 397 % 1400);

	for (size_t k = 0; k < len; k++)
		f[k] = (uint8_t)(i * 31 + k * 7 + side);
	f[0] = side ? 0xc0 : 0xa0;
	sim_link_send(LX.l, side, f, len);
}

/* The link of the scenario, with the faults of both sides, and the sends of the sides given
 * (bit 0: side 0, bit 1: side 1). */
static void lx_setup(unsigned sides)
{
	struct sim_link_faults f0 = { .corrupt_ppm = 80000, .dup_ppm = 80000, .reorder_ppm = 80000,
				      .delay_ppm = 150000, .delay_ps = 900000 };
	struct sim_link_faults f1 = { .drop_every = 5, .delay_ppm = 100000, .delay_ps = 250000 };

	memset(&LX, 0, sizeof(LX));
	sim_kernel_set_current(sim_kernel_create());
	LX.l = sim_link_create("fab0", lx_kind, 100000, 100000, lx_kind == SIM_LINK_ETH ? 24 : 0);
	sim_link_attach(LX.l, 0, lx_rx, &LX.log[0]);
	sim_link_attach(LX.l, 1, lx_rx, &LX.log[1]);
	sim_link_set_faults(LX.l, 0, &f0, 42);
	sim_link_set_faults(LX.l, 1, &f1, 42);
	/* A burst, then the last ten frames of each side each after an idle gap of about 1 ms. */
	for (int i = 0; i < 60; i++) {
		sim_time_t gap = i < 50 ? 0 : (sim_time_t)(i - 49) * SIM_PS_PER_MS;

		if (sides & 1)
			sim_schedule_at(sim_kernel(),
					lx_seed ? lx_random_at(0, i) : gap + (sim_time_t)i * 37011 + 3,
					lx_send, (void *)(uintptr_t)(i << 1));
		if (sides & 2)
			sim_schedule_at(sim_kernel(),
					lx_seed ? lx_random_at(1, i)
						: gap * 7 / 10 + (sim_time_t)i * 53001 + 7,
					lx_send, (void *)(uintptr_t)(i << 1 | 1));
	}
}

static void lx_teardown(void)
{
	struct sim_kernel *k = sim_kernel();

	sim_link_destroy(LX.l);
	sim_kernel_destroy(k);
}

/* Wait (up to ms of wall time) until the other side of c is claimed. */
static int wait_peer(struct sim_chan *c, uint64_t ms)
{
	struct timespec ts = { 0, 1000000 };

	for (uint64_t i = 0; !sim_chan_peer_pid(c); i++) {
		if (i >= ms)
			return -1;
		nanosleep(&ts, NULL);
	}
	return 0;
}

/* One end in this process: join the channel, wait for the peer to attach too (both start at
 * 0: neither runs alone), run to the end. */
static int lx_end(int side, uint64_t stall_ms)
{
	struct sim_chan_params p;
	struct sim_chan *c;

	sim_chan_default_params(&p, 100000);
	lx_setup(1u << side);
	if (sim_chan_join(&c, path, side, &p))
		return -1;
	if (wait_peer(c, stall_ms) || sim_link_remote(LX.l, side, c, stall_ms)) {
		sim_chan_close(c); /* not the link's yet */
		return -1;
	}
	sim_run_until(sim_kernel(), LX_END);
	return sim_halted(sim_kernel()) ? -2 : 0;
}

static void lx_expect_same(const struct lx_log *got, const struct lx_log *want, int side)
{
	cr_expect_eq(got->n, want->n, "side %d received %d frames, in one process %d", side,
		     got->n, want->n);
	for (int i = 0; i < got->n && i < want->n; i++)
		cr_expect(got->at[i] == want->at[i] && got->len[i] == want->len[i] &&
			  got->crc[i] == want->crc[i] && got->fcs_ok[i] == want->fcs_ok[i],
			  "side %d frame %d: at %llu ps, %u bytes, crc %08x, fcs %d; in one process "
			  "at %llu ps, %u bytes, crc %08x, fcs %d", side, i,
			  (unsigned long long)got->at[i], got->len[i], got->crc[i], got->fcs_ok[i],
			  (unsigned long long)want->at[i], want->len[i], want->crc[i],
			  want->fcs_ok[i]);
}

/* The scenario with both sides here, then with side 1 in a child process: the same deliveries. */
static void lx_compare(enum sim_link_kind kind)
{
	struct lx_log one[2], child;
	uint64_t inj[5];
	char logpath[160];
	pid_t pid;
	int st, r, fd;

	/* The reference: both sides in this process. */
	lx_kind = kind;
	lx_setup(3);
	sim_run_until(sim_kernel(), LX_END);
	memcpy(one, LX.log, sizeof(one));
	sim_link_fault_counts(LX.l, 0, inj);
	cr_assert(inj[2] && inj[3] && inj[4] && (inj[1] || kind == SIM_LINK_IB),
		  "side 0's faults all happened");
	lx_teardown();
	cr_assert_gt(one[0].n, 60, "side 0 got side 1's frames and the echoes");
	cr_assert_gt(one[1].n, 40);

	snprintf(logpath, sizeof(logpath), "%s/side1.log", dir);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		r = lx_end(1, 20000);
		if (r)
			fprintf(stderr, "child: %d: %s\n", r, sim_last_error());
		fd = open(logpath, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		if (fd < 0 || write(fd, &LX.log[1], sizeof(LX.log[1])) != sizeof(LX.log[1]))
			r = -3;
		close(fd);
		lx_teardown();
		_exit(r ? 1 : 0);
	}
	r = lx_end(0, 20000);
	cr_expect_eq(r, 0, "parent: %s", sim_halted(sim_kernel()) ? sim_halted(sim_kernel())
								  : sim_last_error());
	cr_expect_eq(sim_now(sim_kernel()), LX_END);
	lx_expect_same(&LX.log[0], &one[0], 0);
	lx_teardown();
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child failed (status 0x%x)", st);
	fd = open(logpath, O_RDONLY);
	cr_assert_eq(read(fd, &child, sizeof(child)), (ssize_t)sizeof(child));
	close(fd);
	lx_expect_same(&child, &one[1], 1);
}

Test(fabric, an_ethernet_link_across_two_processes_delivers_as_in_one)
{
	lx_compare(SIM_LINK_ETH);
}

Test(fabric, an_infiniband_link_across_two_processes_delivers_as_in_one)
{
	lx_compare(SIM_LINK_IB);
}

Test(fabric, random_bursts_and_gaps_across_two_processes_deliver_as_in_one)
{
	/* Each seed its own send times: frames in bursts and alone, gaps of up to 10 ms. */
	for (lx_seed = 1; lx_seed <= 6; lx_seed++)
		lx_compare(lx_seed % 2 ? SIM_LINK_ETH : SIM_LINK_IB);
}

Test(fabric, a_peer_breaking_the_protocol_halts_the_run_naming_it)
{
	struct sim_chan_params p;
	struct sim_chan *peer;
	size_t len;
	uint8_t *raw;

	/* This process is the peer too: it holds side 1 and publishes a slot of no known type. */
	sim_chan_default_params(&p, 100000);
	cr_assert_eq(sim_chan_create(&peer, path, 1, &p), 0, "%s", sim_last_error());
	raw = map_raw(&len);
	raw[4096 + (size_t)p.slots * p.slot_bytes + 63] = 0x23 | 0x80;
	munmap(raw, len);
	/* Side 1 was there first: side 0 joins late, and the slot it reads for its start time
	 * breaks the protocol. */
	cr_expect_eq(lx_end(0, 5000), -1, "joining fails");
	cr_expect(strstr(sim_last_error(), "slot 0 from side 1: unknown type 0x23"),
		  "error: %s", sim_last_error());
	cr_expect_eq(sim_now(sim_kernel()), 0, "nothing ran");
	lx_teardown();
	sim_chan_close(peer);
}

Test(fabric, a_peer_that_never_comes_holds_nothing_back_and_its_frames_are_lost)
{
	struct sim_chan_params p;
	struct sim_chan *c;
	uint64_t inj[5];
	uint8_t *raw;
	size_t len;

	sim_chan_default_params(&p, 100000);
	lx_setup(1);
	cr_assert_eq(sim_chan_join(&c, path, 0, &p), 0, "%s", sim_last_error());
	cr_assert_eq(sim_link_remote(LX.l, 0, c, 200), 0, "%s", sim_last_error());
	sim_run_until(sim_kernel(), LX_END); /* nobody attaches side 1 */
	cr_expect(!sim_halted(sim_kernel()), "halted: %s", sim_halted(sim_kernel()));
	cr_expect_eq(sim_now(sim_kernel()), LX_END);
	cr_expect_eq(sim_link_frames(LX.l, 0), 60, "side 0 sent its frames");
	sim_link_fault_counts(LX.l, 0, inj);
	/* Each copy of a duplicated frame is lost; a frame a reorder holds back behind a next one
	 * that never comes stays held. */
	cr_expect(sim_link_lost_absent(LX.l, 0) >= sim_link_frames(LX.l, 0) - 1 &&
		  sim_link_lost_absent(LX.l, 0) <= sim_link_frames(LX.l, 0) + inj[2],
		  "every frame put on the wire was lost (%llu of %llu sent, %llu duplicated)",
		     (unsigned long long)sim_link_lost_absent(LX.l, 0),
		     (unsigned long long)sim_link_frames(LX.l, 0), (unsigned long long)inj[2]);
	raw = map_raw(&len);
	cr_expect_eq(raw[4096 + 63], 0, "nothing was written to a ring nobody reads");
	munmap(raw, len);
	lx_teardown();
}

Test(fabric, a_peer_that_comes_and_stays_silent_halts_the_wait_naming_it)
{
	struct sim_chan_params p;
	struct sim_chan *peer;
	int r;

	/* This process holds side 1 too, and never writes to it. */
	sim_chan_default_params(&p, 100000);
	lx_setup(1);
	cr_assert_eq(sim_chan_create(&peer, path, 0, &p), 0, "%s", sim_last_error());
	cr_assert_eq(sim_link_remote(LX.l, 0, peer, 200), 0, "%s", sim_last_error());
	cr_assert_eq(sim_chan_attach(&peer, path, 1, &p), 0, "%s", sim_last_error());
	sim_run_until(sim_kernel(), LX_END);
	r = sim_halted(sim_kernel()) ? -2 : 0;
	sim_chan_close(peer);

	cr_expect_eq(r, -2, "the run halts (%d)", r);
	cr_expect(sim_halted(sim_kernel()) && strstr(sim_halted(sim_kernel()),
						     "waited 200 ms of wall time for a peer to "
						     "promise past"),
		  "halted: %s", sim_halted(sim_kernel()));
	cr_expect_lt(sim_now(sim_kernel()), LX_END, "time did not run ahead of the peer");
	lx_teardown();
}

Test(fabric, a_peer_that_leaves_no_longer_holds_time_back)
{
	struct sim_chan_params p;
	uint8_t *raw;
	size_t len;
	pid_t pid;
	int st;

	sim_chan_default_params(&p, 100000);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		struct sim_chan *c;

		/* Joins, then leaves at once with TERMINATE, as sim_link_destroy does. */
		_exit(sim_chan_join(&c, path, 1, &p) || sim_chan_send_terminate(c) ? 1 : 0);
	}
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	cr_expect_eq(lx_end(0, 5000), 0, "runs to the end: %s", sim_halted(sim_kernel()));
	cr_expect_eq(sim_now(sim_kernel()), LX_END);
	cr_expect_gt(sim_link_frames(LX.l, 0), 50, "side 0 sent, to nobody");
	raw = map_raw(&len);
	cr_expect_eq(raw[4096 + 63], 0, "nothing was written to a ring nobody reads");
	munmap(raw, len);
	cr_expect_eq(LX.log[0].n, 0);
	lx_teardown();
}

Test(fabric, a_link_goes_remote_only_with_a_matching_channel_and_no_capture)
{
	struct sim_chan_params p;
	struct sim_chan *c;
	char pcap[160];

	sim_chan_default_params(&p, 200000);
	lx_setup(0);
	cr_assert_eq(sim_chan_create(&c, path, 0, &p), 0, "%s", sim_last_error());
	expect_error(sim_link_remote(LX.l, 0, c, 100), -EINVAL,
		     "latency_ps 200000 of channel");
	snprintf(pcap, sizeof(pcap), "%s/x.pcap", dir);
	cr_assert_eq(sim_link_pcap(LX.l, pcap), 0);
	expect_error(sim_link_remote(LX.l, 0, c, 100), -EINVAL, "no capture");
	sim_link_pcap(LX.l, NULL);
	expect_error(sim_link_remote(LX.l, 2, c, 100), -EINVAL, "side 2");
	sim_chan_close(c);
	lx_teardown();
}

/* Slots of ring side that have ever been written (a timestamp other than 0). */
static unsigned written_slots(int side, const struct sim_chan_params *p)
{
	size_t len;
	uint8_t *raw = map_raw(&len);
	unsigned n = 0;

	for (uint32_t i = 0; i < p->slots; i++)
		n += le(raw + 4096 + ((size_t)side * p->slots + i) * p->slot_bytes + 48, 8) != 0;
	munmap(raw, len);
	return n;
}

Test(fabric, two_idle_hosts_jump_over_idle_time_together)
{
	struct sim_chan_params p;
	pid_t pid;
	int st;

	/* The scenario's 12 ms are mostly idle gaps: a SYNC per latency would be 120 000 of them,
	 * wrapping each ring of 512 slots hundreds of times. */
	sim_chan_default_params(&p, 100000);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		int r = lx_end(1, 20000);
		unsigned n = r ? 0 : written_slots(1, &p); /* before it leaves, with the file */

		if (r || n >= 400)
			fprintf(stderr, "child: %s; side 1 wrote %u slots: its waits crept one "
				"latency at a time\n", sim_halted(sim_kernel()), n);
		lx_teardown();
		_exit(r || n >= 400 ? 1 : 0);
	}
	cr_expect_eq(lx_end(0, 20000), 0, "%s", sim_halted(sim_kernel()));
	cr_expect_eq(sim_now(sim_kernel()), LX_END);
	cr_expect_lt(written_slots(0, &p), 400, "side 0 wrote %u slots: its waits crept one latency "
		     "at a time", written_slots(0, &p));
	lx_teardown();
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child failed (status 0x%x)", st);
	cr_expect_neq(access(path, F_OK), 0, "the last to leave removed the channel file");
}

/* Late join: side 0 runs alone to LJ_T1 (what it sends is lost), then side 1's process attaches
 * and starts at LJ_T1, and the rest of the scenario flows both ways. */
#define LJ_T1 (3 * SIM_PS_PER_MS)

struct lj_result {
	struct lx_log log;
	sim_time_t start;     /* side 1: its time once joined */
	uint64_t lost, sent;  /* side 0: frames lost while alone, and sent by then */
};

/* Side 1: wait for the go, join late, run to the end. */
static int lj_side1(int go, struct lj_result *res)
{
	struct sim_chan_params p;
	struct sim_chan *c;
	char b;

	sim_chan_default_params(&p, 100000);
	if (read(go, &b, 1) != 1)
		return -1;
	lx_setup(2);
	if (sim_chan_join(&c, path, 1, &p) || sim_link_remote(LX.l, 1, c, 20000))
		return -1;
	res->start = sim_now(sim_kernel());
	sim_run_until(sim_kernel(), LX_END);
	res->log = LX.log[1];
	return sim_halted(sim_kernel()) ? -2 : 0;
}

/* Side 0: alone to LJ_T1, then the go to side 1, and on once it is there. */
static int lj_side0(int go, struct lj_result *res)
{
	struct sim_chan_params p;
	struct sim_chan *c;

	sim_chan_default_params(&p, 100000);
	lx_setup(1);
	if (sim_chan_join(&c, path, 0, &p) || sim_link_remote(LX.l, 0, c, 20000))
		return -1;
	sim_run_until(sim_kernel(), LJ_T1);
	res->lost = sim_link_lost_absent(LX.l, 0);
	res->sent = sim_link_frames(LX.l, 0);
	if (write(go, "g", 1) != 1 || wait_peer(c, 20000))
		return -1;
	sim_run_until(sim_kernel(), LX_END);
	res->log = LX.log[0];
	return sim_halted(sim_kernel()) ? -2 : 0;
}

/* One run: side 1 in a child process; its result comes back through a file. */
static void lj_run(struct lj_result res[2])
{
	char logpath[160];
	int go[2], st, r, fd;
	pid_t pid;

	snprintf(logpath, sizeof(logpath), "%s/side1.log", dir);
	cr_assert_eq(pipe(go), 0);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		memset(&res[1], 0, sizeof(res[1]));
		r = lj_side1(go[0], &res[1]);
		if (r)
			fprintf(stderr, "child: %d: %s\n", r, sim_last_error());
		fd = open(logpath, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		if (fd < 0 || write(fd, &res[1], sizeof(res[1])) != sizeof(res[1]))
			r = -3;
		close(fd);
		lx_teardown();
		_exit(r ? 1 : 0);
	}
	memset(&res[0], 0, sizeof(res[0]));
	r = lj_side0(go[1], &res[0]);
	cr_expect_eq(r, 0, "side 0: %s", sim_halted(sim_kernel()) ? sim_halted(sim_kernel())
								  : sim_last_error());
	lx_teardown();
	close(go[0]);
	close(go[1]);
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child failed (status 0x%x)", st);
	fd = open(logpath, O_RDONLY);
	cr_assert_eq(read(fd, &res[1], sizeof(res[1])), (ssize_t)sizeof(res[1]));
	close(fd);
}

Test(fabric, a_late_joiner_starts_at_the_running_sides_time_and_traffic_flows_both_ways)
{
	struct lj_result a[2], b[2];
	int echoes = 0, first1 = 0;

	lx_kind = SIM_LINK_ETH;
	lj_run(a);
	cr_expect_eq(a[1].start, LJ_T1, "side 1 started at %llu ps, side 0 was at %llu",
		     (unsigned long long)a[1].start, (unsigned long long)LJ_T1);
	cr_expect_gt(a[0].sent, 30, "side 0 sent its burst alone");
	cr_expect_geq(a[0].lost, a[0].sent, "what it sent alone was lost (%llu of %llu)",
		      (unsigned long long)a[0].lost, (unsigned long long)a[0].sent);
	for (int i = 0; i < a[0].log.n; i++) {
		echoes += a[0].log.crc[i] && a[0].log.at[i] > LJ_T1;
		first1 += a[0].log.at[i] <= LJ_T1;
	}
	cr_expect_gt(a[0].log.n, 40, "side 0 received side 1's frames and echoes");
	cr_expect_eq(first1, 0, "nothing arrived before the join");
	cr_expect_gt(a[1].log.n, 5, "side 1 received side 0's frames sent after the join");
	for (int i = 0; i < a[1].log.n; i++)
		cr_expect_gt(a[1].log.at[i], LJ_T1);
	/* Again: the same deliveries, to the picosecond. */
	lj_run(b);
	cr_expect_eq(b[1].start, a[1].start);
	cr_expect_eq(b[0].lost, a[0].lost);
	lx_expect_same(&b[0].log, &a[0].log, 0);
	lx_expect_same(&b[1].log, &a[1].log, 1);
}
