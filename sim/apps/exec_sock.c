/* libhcasim-exec.so: TCP sockets between processes of the fabric, placed in simulated time
 * (docs/fabric.md#determinism). Both ends run under hcasim-exec and share DIR/exec.oob, a
 * small file mapped by every process of the fabric, which holds:
 *  - per host, its time as its library last published it (each time its kernel waits for a
 *    peer: hcasim_exec_rules' act), a lower bound on the time of its program's next act;
 *  - the fabric's listening sockets: port, host and the time of the listen;
 *  - per connection, the client's port and time of connect, and per direction a ring of
 *    records (the writer's time and the length of each write), written before the bytes go to
 *    the socket, so that a record is always there before its bytes.
 * A read returns the bytes of one record at the later of the reader's time and the record's
 * time + fabric.oob_ns; an accept at the later of the server's time and the connect's time +
 * fabric.oob_ns; a connect at the later of the client's time and the listen's time +
 * fabric.oob_ns, waiting (in wall time, up to fabric.join_timeout_ms) for a listen that has
 * not happened yet. While the program is blocked in one of them, its device thread runs its
 * HCA no further than the earliest time the call can return (exec_sock_bound), so the time the
 * program comes back at no longer depends on wall time. */
#include "sim/apps/exec_preload.h"
#include "sim/hcasim.h"
#include "sim/hcasim_bus.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define OOB_HOSTS 64
#define OOB_LISTENS 32
#define OOB_CONNS 32
#define OOB_RECS 256
#define MAX_FD 4096

struct oob_rec {
	uint64_t stamp; /* the writer's simulated time at the write, ps */
	uint32_t len;	/* bytes; 0 with eof */
	uint32_t eof;	/* the writer closed its end */
};
struct oob_ring {
	uint64_t wr, rd; /* records written, read (atomic: one writer each) */
	struct oob_rec rec[OOB_RECS];
};
enum { SLOT_FREE, SLOT_CLAIMED, SLOT_CONNECTING, SLOT_CONNECTED };
struct oob_conn {
	uint32_t state;	   /* SLOT_* (atomic) */
	uint32_t open;	   /* bit s: side s has not closed it (atomic) */
	uint32_t port;	   /* the server's port */
	uint32_t cport;	   /* the client's */
	uint32_t host[2];  /* the client's host, the server's */
	uint64_t c_stamp;  /* the client's time at connect */
	struct oob_ring ring[2]; /* ring[s]: what side s writes */
};
struct oob_listen {
	uint32_t state; /* SLOT_FREE, SLOT_CLAIMED, SLOT_CONNECTED: listening (atomic) */
	uint32_t port, host;
	int32_t pid;
	uint64_t stamp; /* the host's time at the listen */
};
struct oob_host {
	uint64_t act; /* hcasim_exec_rules' act (atomic) */
	int32_t pid;  /* the process holding the host, 0: none */
	uint32_t pad;
};
struct oob_file {
	struct oob_host host[OOB_HOSTS];
	struct oob_listen listen[OOB_LISTENS];
	struct oob_conn conn[OOB_CONNS];
};

static struct oob_file *oob; /* NULL: no fabric, sockets are left alone */
static char oob_path[4200], fab_dir[4096];
static unsigned my_host, nhosts;
static uint64_t oob_ps, join_ms;
static struct exec_sock *socks[MAX_FD];

/* What the program is blocked in, for exec_sock_bound (one entry per blocked thread). */
enum { W_NONE, W_READ, W_ACCEPT, W_CONNECT };
static struct {
	int kind; /* W_* (atomic) */
	int conn, side;
	uint32_t port;
} waits[8];

#define LOAD(p) __atomic_load_n((p), __ATOMIC_ACQUIRE)
#define STORE(p, v) __atomic_store_n((p), (v), __ATOMIC_RELEASE)

static uint64_t wall_ms(void)
{
	struct timespec ts;

	exec_real_clock(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static void nap(void)
{
	struct timespec ts = { 0, 200000 };

	nanosleep(&ts, NULL);
}

struct exec_sock *exec_sock_of(int fd)
{
	return oob && fd >= 0 && fd < MAX_FD ? socks[fd] : NULL;
}

static void close_all(void)
{
	for (int i = 0; i < MAX_FD; i++)
		exec_sock_close(i);
}

static struct exec_sock *sock_new(int fd, int listen, int conn, int side)
{
	static bool hooked;
	struct exec_sock *s;

	if (fd < 0 || fd >= MAX_FD || !(s = calloc(1, sizeof(*s))))
		return NULL;
	/* Registered after the boot's own handler, this runs first at exit: the streams end at
	 * the host's time, before the simulation shuts down. */
	if (!hooked && !atexit(close_all))
		hooked = true;
	*s = (struct exec_sock){ .listen = listen, .conn = conn, .side = side };
	free(socks[fd]);
	socks[fd] = s;
	return s;
}

/* ---- simulated time ---- */

/* The host's time (0 before the boot), the simulation held: no device thread runs meanwhile. */
static uint64_t host_now(void)
{
	return hcasim_booted() ? hcasim_now_ps() : 0;
}

/* The program acts at t at the earliest: its host's time moves there. Its peers learn that at
 * once (its published time; the library's only grows), as the run to t may wait for them. */
static void advance_to(uint64_t t)
{
	uint64_t now;

	hcasim_bus_hold();
	if (t > oob->host[my_host].act)
		STORE(&oob->host[my_host].act, t);
	now = host_now();
	if (hcasim_booted() && t > now)
		hcasim_host_advance(t - now);
	hcasim_bus_release();
}

/* The smallest time any other host may still act at: its published time. */
static uint64_t others_act(void)
{
	uint64_t m = UINT64_MAX;

	for (unsigned h = 0; h < nhosts && h < OOB_HOSTS; h++)
		if (h != my_host && LOAD(&oob->host[h].act) < m)
			m = LOAD(&oob->host[h].act);
	return m;
}

/* The earliest time the call of wait entry i can return. The peer's published time is read
 * before its records: a record written after that look has a time at least as late. */
static uint64_t bound_one(int i)
{
	uint64_t b = others_act();

	if (waits[i].kind == W_READ) {
		struct oob_conn *c = &oob->conn[waits[i].conn];
		struct oob_ring *r = &c->ring[!waits[i].side];
		uint64_t rd = LOAD(&r->rd);

		b = LOAD(&oob->host[c->host[!waits[i].side]].act);
		if (LOAD(&r->wr) > rd)
			b = r->rec[rd % OOB_RECS].stamp;
	} else if (waits[i].kind == W_ACCEPT) {
		for (int k = 0; k < OOB_CONNS; k++) {
			struct oob_conn *c = &oob->conn[k];

			if (LOAD(&c->state) == SLOT_CONNECTING && c->port == waits[i].port &&
			    c->c_stamp < b)
				b = c->c_stamp;
		}
	}
	return b == UINT64_MAX ? b : b + oob_ps;
}

/* hcasim_exec_rules' bound: the earliest time the program's followed call can return; 0 when
 * it is in none. */
static uint64_t exec_sock_bound(void)
{
	uint64_t b = 0;

	for (int i = 0; i < 8; i++)
		if (LOAD(&waits[i].kind) != W_NONE) {
			uint64_t x = bound_one(i);

			b = !b || x < b ? x : b;
		}
	return b;
}

static int wait_begin(int kind, int conn, int side, uint32_t port)
{
	for (int i = 0; i < 8; i++) {
		int none = W_NONE;

		if (LOAD(&waits[i].kind) != W_NONE)
			continue;
		waits[i].conn = conn;
		waits[i].side = side;
		waits[i].port = port;
		if (__atomic_compare_exchange_n(&waits[i].kind, &none, kind, false,
						__ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
			return i;
	}
	return -1; /* more threads blocked than followed: the device thread holds meanwhile */
}

static void wait_end(int i)
{
	if (i >= 0)
		STORE(&waits[i].kind, W_NONE);
}

/* ---- records ---- */

/* Write a record of len bytes (or the end of stream) on s's direction, stamped with the host's
 * time, before its bytes go to the socket. A ring full of records the reader has not taken
 * waits for it (up to fabric.join_timeout_ms: ENOBUFS). */
static int push_rec(struct exec_sock *s, uint32_t len, bool eof)
{
	struct oob_ring *r = &oob->conn[s->conn].ring[s->side];
	uint64_t t0 = wall_ms();

	while (r->wr - LOAD(&r->rd) >= OOB_RECS) {
		if (wall_ms() - t0 > join_ms)
			return errno = ENOBUFS, -1;
		nap();
	}
	hcasim_bus_hold();
	r->rec[r->wr % OOB_RECS] = (struct oob_rec){ host_now(), len, eof };
	STORE(&r->wr, r->wr + 1);
	hcasim_bus_release();
	return 0;
}

static ssize_t real_recv(int fd, void *buf, size_t n, int flags)
{
	static void *f;
	ssize_t (*rcv)(int, void *, size_t, int) = exec_libc(&f, "recv");

	return rcv(fd, buf, n, flags);
}

static bool nonblocking(int fd, int flags)
{
	return (flags & MSG_DONTWAIT) || (fcntl(fd, F_GETFL) & O_NONBLOCK);
}

/* Take the next record of the peer's direction: its time + fabric.oob_ns is when the program
 * reads it. Waits for one (the device thread meanwhile runs to exec_sock_bound); a peer that
 * has gone without a record ends the stream. 0, or -1 with errno (EAGAIN, EINTR). */
static int take_rec(int fd, struct exec_sock *s, int flags)
{
	struct oob_ring *r = &oob->conn[s->conn].ring[!s->side];
	int w = -1, rc = 0;
	struct oob_rec rec;
	char c;

	while (LOAD(&r->wr) == r->rd && rc == 0) {
		struct pollfd p = { fd, POLLIN, 0 };

		if (nonblocking(fd, flags))
			return errno = EAGAIN, -1;
		if (w < 0)
			w = wait_begin(W_READ, s->conn, s->side, 0);
		rc = poll(&p, 1, 50) < 0 && errno == EINTR ? -1 : 0;
		if (!rc && LOAD(&r->wr) == r->rd && (p.revents & (POLLIN | POLLHUP)) &&
		    real_recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT) == 0)
			rc = 1; /* gone without a word */
	}
	wait_end(w);
	if (rc)
		return rc < 0 ? -1 : (s->eof = true, 0);
	rec = r->rec[r->rd % OOB_RECS];
	advance_to(rec.stamp + oob_ps);
	if (rec.eof) {
		s->eof = true;
		STORE(&r->rd, r->rd + 1);
	}
	s->left = rec.len;
	return 0;
}

/* Up to n bytes of the record being read, all of them (its writer has sent them). */
static ssize_t rec_bytes(int fd, struct exec_sock *s, char *buf, size_t n, int flags)
{
	size_t want = n < s->left ? n : s->left, got = 0;
	bool peek = flags & MSG_PEEK;

	while (got < want) {
		struct pollfd p = { fd, POLLIN, 0 };
		ssize_t r = peek ? real_recv(fd, buf, want, MSG_PEEK | MSG_DONTWAIT)
				 : real_recv(fd, buf + got, want - got, MSG_DONTWAIT);

		if (r == 0)
			break; /* the peer died in the middle */
		if (r > 0) {
			got = peek ? (size_t)r : got + (size_t)r;
			if (peek && got < want)
				poll(&p, 1, 1);
			continue;
		}
		if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
			return got ? (ssize_t)got : -1;
		poll(&p, 1, 50);
	}
	if (!peek && (s->left -= (uint32_t)got) == 0) {
		struct oob_ring *r = &oob->conn[s->conn].ring[!s->side];

		STORE(&r->rd, r->rd + 1);
	}
	return got ? (ssize_t)got : (s->eof = true, 0);
}

ssize_t exec_sock_recv(int fd, struct exec_sock *s, void *buf, size_t n, int flags)
{
	size_t got = 0;

	if (!n)
		return 0;
	do {
		ssize_t r;

		if (!s->eof && !s->left && take_rec(fd, s, flags))
			return got ? (ssize_t)got : -1;
		if (s->eof)
			break;
		if ((r = rec_bytes(fd, s, (char *)buf + got, n - got, flags)) < 0)
			return got ? (ssize_t)got : -1;
		got += (size_t)r;
	} while ((flags & MSG_WAITALL) && !(flags & MSG_PEEK) && got < n && !s->eof);
	return (ssize_t)got;
}

ssize_t exec_sock_send(int fd, struct exec_sock *s, const void *buf, size_t n, int flags)
{
	ssize_t (*snd)(int, const void *, size_t, int);
	static void *f;
	size_t off = 0;

	snd = exec_libc(&f, "send");
	if (s->wr_closed || !n)
		return snd(fd, buf, n, flags);
	if (push_rec(s, (uint32_t)n, false))
		return -1;
	while (off < n) {
		struct pollfd p = { fd, POLLOUT, 0 };
		ssize_t r = snd(fd, (const char *)buf + off, n - off, flags | MSG_DONTWAIT);

		if (r > 0)
			off += (size_t)r;
		else if (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
			return off ? (ssize_t)off : -1;
		else
			poll(&p, 1, 50);
	}
	return (ssize_t)n;
}

void exec_sock_shut(struct exec_sock *s)
{
	if (s->conn >= 0 && !s->wr_closed && !push_rec(s, 0, true))
		s->wr_closed = true;
}

void exec_sock_close(int fd)
{
	struct exec_sock *s = exec_sock_of(fd);

	if (!s)
		return;
	if (s->listen >= 0)
		STORE(&oob->listen[s->listen].state, SLOT_FREE);
	if (s->conn >= 0) {
		struct oob_conn *c = &oob->conn[s->conn];

		exec_sock_shut(s);
		if (!__atomic_and_fetch(&c->open, ~(1u << s->side), __ATOMIC_ACQ_REL))
			STORE(&c->state, SLOT_FREE);
	}
	free(s);
	socks[fd] = NULL;
}

/* ---- listen, connect, accept ---- */

static bool tcp(int fd, int *family)
{
	struct sockaddr_storage ss;
	socklen_t l = sizeof(int), sl = sizeof(ss);
	int type = 0;

	if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &l) || type != SOCK_STREAM ||
	    getsockname(fd, (struct sockaddr *)&ss, &sl))
		return false;
	*family = ss.ss_family;
	return ss.ss_family == AF_INET || ss.ss_family == AF_INET6;
}

static uint32_t port_of(const struct sockaddr_storage *ss)
{
	return ss->ss_family == AF_INET ? ntohs(((const struct sockaddr_in *)ss)->sin_port)
					: ntohs(((const struct sockaddr_in6 *)ss)->sin6_port);
}

/* fd's own port (peer: its peer's), 0 if it has none. */
static uint32_t fd_port(int fd, bool peer)
{
	struct sockaddr_storage ss;
	socklen_t l = sizeof(ss);

	if ((peer ? getpeername : getsockname)(fd, (struct sockaddr *)&ss, &l))
		return 0;
	return port_of(&ss);
}

static bool loopback(const struct sockaddr *a, socklen_t len)
{
	if (a->sa_family == AF_INET && len >= sizeof(struct sockaddr_in))
		return ntohl(((const struct sockaddr_in *)a)->sin_addr.s_addr) >> 24 == 127;
	if (a->sa_family == AF_INET6 && len >= sizeof(struct sockaddr_in6)) {
		const struct in6_addr *x = &((const struct sockaddr_in6 *)a)->sin6_addr;

		return IN6_IS_ADDR_LOOPBACK(x) || (IN6_IS_ADDR_V4MAPPED(x) && x->s6_addr[12] == 127);
	}
	return false;
}

/* The registration of a listen on port (by a live listener), or -1. */
static int listen_find(uint32_t port)
{
	for (int i = 0; i < OOB_LISTENS; i++)
		if (LOAD(&oob->listen[i].state) == SLOT_CONNECTED && oob->listen[i].port == port)
			return i;
	return -1;
}

/* Claim a free slot of n at state (each slot starts with its uint32_t state), or -1. */
static int claim(void *slots, size_t size, int n)
{
	for (int i = 0; i < n; i++) {
		uint32_t *st = (uint32_t *)((char *)slots + (size_t)i * size), free_ = SLOT_FREE;

		if (__atomic_compare_exchange_n(st, &free_, SLOT_CLAIMED, false, __ATOMIC_ACQ_REL,
						__ATOMIC_ACQUIRE))
			return i;
	}
	return -1;
}

int listen(int fd, int backlog)
{
	static void *f;
	int (*real)(int, int) = exec_libc(&f, "listen");
	int family, r, i;
	uint64_t t;

	if (!oob || !tcp(fd, &family))
		return real(fd, backlog);
	hcasim_bus_hold();
	t = host_now();
	hcasim_bus_release();
	if ((r = real(fd, backlog)) || (i = claim(oob->listen, sizeof(oob->listen[0]),
						  OOB_LISTENS)) < 0)
		return r;
	oob->listen[i] = (struct oob_listen){ SLOT_CLAIMED, fd_port(fd, false), my_host,
					      (int32_t)syscall(SYS_getpid), t };
	STORE(&oob->listen[i].state, SLOT_CONNECTED);
	if (!sock_new(fd, i, -1, 0))
		STORE(&oob->listen[i].state, SLOT_FREE);
	return 0;
}

/* An unbound socket gets its port before connect, so its connection's slot can name it. A
 * connect that failed gives an unlocked port back (getsockname still shows it): the retry
 * binds it again by number (or, taken meanwhile, another one). */
static int bind_any(int fd, int family, struct oob_conn *cn)
{
	struct sockaddr_storage ss = { .ss_family = (sa_family_t)family };
	socklen_t len = family == AF_INET ? sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6);
	uint16_t port = htons((uint16_t)cn->cport);

	if (family == AF_INET)
		((struct sockaddr_in *)&ss)->sin_port = port;
	else
		((struct sockaddr_in6 *)&ss)->sin6_port = port;
	if (cn->cport && bind(fd, (struct sockaddr *)&ss, len) && errno == EINVAL)
		return 0; /* still bound to it */
	ss = (struct sockaddr_storage){ .ss_family = (sa_family_t)family };
	if (!fd_port(fd, false) && bind(fd, (struct sockaddr *)&ss, len))
		return -1;
	if (!cn->cport || fd_port(fd, false) != cn->cport)
		STORE(&cn->cport, fd_port(fd, false));
	return 0;
}

/* Connect; a connect refused while no fabric process listens on the port waits for one to
 * (up to fabric.join_timeout_ms), then tries once more. 0 or -1 with errno; *l the listener's
 * registration (-1: none). */
static int connect_wait(int fd, int family, const struct sockaddr *a, socklen_t len,
			struct oob_conn *cn, int *l)
{
	static void *f;
	int (*real)(int, const struct sockaddr *, socklen_t) = exec_libc(&f, "connect");
	uint64_t t0 = wall_ms();
	int before = listen_find(cn->port);

	if (!real(fd, a, len))
		return *l = listen_find(cn->port), 0;
	*l = before;
	if (errno != ECONNREFUSED || before >= 0)
		return -1;
	while ((*l = listen_find(cn->port)) < 0) {
		if (wall_ms() - t0 > join_ms)
			return errno = ECONNREFUSED, -1;
		nap();
	}
	return bind_any(fd, family, cn) ? -1 : real(fd, a, len);
}

int connect(int fd, const struct sockaddr *a, socklen_t len)
{
	static void *f;
	int (*real)(int, const struct sockaddr *, socklen_t) = exec_libc(&f, "connect");
	int family, c, w, l, r, e;
	struct oob_conn *cn;

	if (!oob || !a || !loopback(a, len) || !tcp(fd, &family) ||
	    (fcntl(fd, F_GETFL) & O_NONBLOCK) ||
	    (c = claim(oob->conn, sizeof(oob->conn[0]), OOB_CONNS)) < 0)
		return real(fd, a, len);
	cn = &oob->conn[c];
	memset((char *)cn + sizeof(cn->state), 0, sizeof(*cn) - sizeof(cn->state));
	if (bind_any(fd, family, cn)) {
		STORE(&cn->state, SLOT_FREE);
		return real(fd, a, len);
	}
	cn->port = port_of((const struct sockaddr_storage *)a);
	cn->host[0] = my_host;
	cn->open = 3;
	hcasim_bus_hold(); /* the slot is there before this host's time can pass its stamp */
	cn->c_stamp = host_now();
	STORE(&cn->state, SLOT_CONNECTING);
	hcasim_bus_release();
	w = wait_begin(W_CONNECT, c, 0, cn->port);
	r = connect_wait(fd, family, a, len, cn, &l);
	e = errno;
	wait_end(w);
	if (l >= 0) {
		cn->host[1] = oob->listen[l].host;
		advance_to(oob->listen[l].stamp + oob_ps);
	}
	if (r || l < 0 || !sock_new(fd, -1, c, 0)) {
		STORE(&cn->state, SLOT_FREE); /* refused, or not a fabric listener */
		errno = e;
		return r;
	}
	return 0;
}

static int do_accept(int fd, struct sockaddr *a, socklen_t *al, int flags)
{
	static void *f;
	int (*real)(int, struct sockaddr *, socklen_t *, int) = exec_libc(&f, "accept4");
	struct exec_sock *s = exec_sock_of(fd);
	uint32_t port, cport;
	int w, nfd;

	if (!s || s->listen < 0)
		return real(fd, a, al, flags);
	port = oob->listen[s->listen].port;
	w = wait_begin(W_ACCEPT, -1, 0, port);
	nfd = real(fd, a, al, flags);
	wait_end(w);
	if (nfd < 0 || !(cport = fd_port(nfd, true)))
		return nfd;
	for (int c = 0; c < OOB_CONNS; c++) {
		struct oob_conn *cn = &oob->conn[c];

		if (LOAD(&cn->state) != SLOT_CONNECTING || cn->port != port || LOAD(&cn->cport) != cport)
			continue;
		if (sock_new(nfd, -1, c, 1)) {
			STORE(&cn->state, SLOT_CONNECTED);
			advance_to(cn->c_stamp + oob_ps);
		}
		break;
	}
	return nfd; /* a client from outside the fabric is left alone */
}

int accept(int fd, struct sockaddr *a, socklen_t *al)
{
	return do_accept(fd, a, al, 0);
}

int accept4(int fd, struct sockaddr *a, socklen_t *al, int flags)
{
	return do_accept(fd, a, al, flags);
}

/* ---- the shared file ---- */

static uint64_t cfg(const char *key)
{
	char v[64];

	return hcasim_config_get(key, v, sizeof(v)) ? 0 : strtoull(v, NULL, 10);
}

static bool alive(int32_t pid)
{
	return pid > 0 && !(kill(pid, 0) && errno == ESRCH);
}

/* Under the file's lock: a file whose hosts' processes are all gone is from a crashed run (or
 * the last one's end): started afresh. */
static void oob_claim(void)
{
	bool live = false, stale = false;

	for (int h = 0; h < OOB_HOSTS; h++) {
		int32_t pid = oob->host[h].pid;

		stale |= pid && !alive(pid);
		live |= alive(pid) && h != (int)my_host;
	}
	if (!live) {
		if (stale)
			fprintf(stderr, "hcasim-exec: %s was left by processes that are gone: "
				"replaced\n", oob_path);
		memset(oob, 0, sizeof(*oob));
	}
	oob->host[my_host].act = 0;
	STORE(&oob->host[my_host].pid, (int32_t)syscall(SYS_getpid));
}

/* At exit: this process's sockets end their streams, it lets its host go, and the last one
 * out removes the file (and the fabric's directory, if nothing else is left in it). */
static void oob_leave(void)
{
	int fd = open(oob_path, O_RDONLY | O_CLOEXEC);
	int32_t me = (int32_t)syscall(SYS_getpid);
	bool live = false;

	close_all();
	if (fd >= 0)
		flock(fd, LOCK_EX);
	/* (a shell or stdbuf that ran the program leaves the program's claim alone) */
	__atomic_compare_exchange_n(&oob->host[my_host].pid, &me, 0, false, __ATOMIC_ACQ_REL,
				    __ATOMIC_ACQUIRE);
	for (int h = 0; h < OOB_HOSTS; h++)
		live |= alive(oob->host[h].pid);
	if (!live)
		unlink(oob_path);
	if (fd >= 0)
		close(fd);
	munmap(oob, sizeof(*oob));
	oob = NULL;
	rmdir(fab_dir);
}

static int oob_map(void)
{
	int fd = open(oob_path, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
	struct stat st;
	void *m = MAP_FAILED;

	if (fd < 0 || flock(fd, LOCK_EX) || fstat(fd, &st) ||
	    (st.st_size != (off_t)sizeof(*oob) &&
	     (ftruncate(fd, 0) || ftruncate(fd, sizeof(*oob)))) ||
	    (m = mmap(NULL, sizeof(*oob), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)) ==
		    MAP_FAILED) {
		fprintf(stderr, "libhcasim-exec: cannot map %s: %s\n", oob_path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	oob = m;
	oob_claim();
	flock(fd, LOCK_UN); /* (the mapping keeps the file open: closing would not unlock it) */
	close(fd);
	return 0;
}

int exec_sock_start(void)
{
	const char *dir = getenv("HCASIM_FABRIC"), *host = getenv("HCASIM_HOST");
	struct hcasim_exec_rules rules;

	if (!dir || !*dir || !host)
		return 0;
	my_host = (unsigned)atoi(host) % OOB_HOSTS;
	nhosts = (unsigned)cfg("sim.hosts");
	oob_ps = cfg("fabric.oob_ns") * 1000u;
	join_ms = cfg("fabric.join_timeout_ms");
	snprintf(fab_dir, sizeof(fab_dir), "%s", dir);
	snprintf(oob_path, sizeof(oob_path), "%s/exec.oob", dir);
	mkdir(fab_dir, 0777);
	if (oob_map())
		return -1;
	rules = (struct hcasim_exec_rules){ &oob->host[my_host].act, exec_sock_bound,
					    cfg("exec.release_ms"), my_host };
	if (hcasim_exec_rules(&rules) || atexit(oob_leave)) {
		fprintf(stderr, "libhcasim-exec: %s\n", hcasim_last_error());
		return -1;
	}
	return 0;
}
