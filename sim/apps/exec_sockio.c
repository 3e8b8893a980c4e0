/* libhcasim-exec.so: the reads and writes of a TCP connection between two processes of the
 * fabric (exec_sock.c; docs/fabric.md#determinism). A write is a record stamped with the
 * writer's simulated time; a read returns bytes of one record only (all it asked for that the
 * record holds, as the writer has sent them), at the later of the reader's time and the stamp
 * + fabric.oob_ns, so that neither how the kernel cut the stream nor when it delivered it
 * changes what the program sees or when. Every other descriptor goes straight to the C
 * library. */
#include "sim/apps/exec_preload.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

ssize_t read(int fd, void *buf, size_t n)
{
	static void *f;
	struct exec_sock *s = exec_sock_of(fd);

	if (s && s->conn >= 0)
		return exec_sock_recv(fd, s, buf, n, 0);
	return ((ssize_t(*)(int, void *, size_t))exec_libc(&f, "read"))(fd, buf, n);
}

ssize_t recv(int fd, void *buf, size_t n, int flags)
{
	static void *f;
	struct exec_sock *s = exec_sock_of(fd);

	if (s && s->conn >= 0)
		return exec_sock_recv(fd, s, buf, n, flags);
	return ((ssize_t(*)(int, void *, size_t, int))exec_libc(&f, "recv"))(fd, buf, n, flags);
}

ssize_t recvfrom(int fd, void *buf, size_t n, int flags, struct sockaddr *a, socklen_t *al)
{
	static void *f;
	struct exec_sock *s = exec_sock_of(fd);

	if (!s || s->conn < 0)
		return ((ssize_t(*)(int, void *, size_t, int, struct sockaddr *, socklen_t *))
				exec_libc(&f, "recvfrom"))(fd, buf, n, flags, a, al);
	if (a && al && getpeername(fd, a, al))
		return -1;
	return exec_sock_recv(fd, s, buf, n, flags);
}

/* The fortified forms (_FORTIFY_SOURCE turns read(fd, buf, sizeof buf) into these). */
ssize_t __read_chk(int fd, void *buf, size_t n, size_t buflen)
{
	(void)buflen;
	return read(fd, buf, n);
}

ssize_t __recv_chk(int fd, void *buf, size_t n, size_t buflen, int flags)
{
	(void)buflen;
	return recv(fd, buf, n, flags);
}

ssize_t __recvfrom_chk(int fd, void *buf, size_t n, size_t buflen, int flags,
		       struct sockaddr *a, socklen_t *al)
{
	(void)buflen;
	return recvfrom(fd, buf, n, flags, a, al);
}

ssize_t write(int fd, const void *buf, size_t n)
{
	static void *f;
	struct exec_sock *s = exec_sock_of(fd);

	if (s && s->conn >= 0)
		return exec_sock_send(fd, s, buf, n, 0);
	return ((ssize_t(*)(int, const void *, size_t))exec_libc(&f, "write"))(fd, buf, n);
}

ssize_t send(int fd, const void *buf, size_t n, int flags)
{
	static void *f;
	struct exec_sock *s = exec_sock_of(fd);

	if (s && s->conn >= 0)
		return exec_sock_send(fd, s, buf, n, flags);
	return ((ssize_t(*)(int, const void *, size_t, int))exec_libc(&f, "send"))(fd, buf, n,
										   flags);
}

ssize_t sendto(int fd, const void *buf, size_t n, int flags, const struct sockaddr *a,
	       socklen_t al)
{
	static void *f;
	struct exec_sock *s = exec_sock_of(fd);

	if (s && s->conn >= 0) /* connected: the address is ignored, as TCP does */
		return exec_sock_send(fd, s, buf, n, flags);
	return ((ssize_t(*)(int, const void *, size_t, int, const struct sockaddr *, socklen_t))
			exec_libc(&f, "sendto"))(fd, buf, n, flags, a, al);
}

/* Scatter and gather through one buffer: a record is one call's bytes. */
static size_t iov_len(const struct iovec *iov, int cnt)
{
	size_t n = 0;

	for (int i = 0; i < cnt; i++)
		n += iov[i].iov_len;
	return n;
}

static ssize_t vec_recv(int fd, struct exec_sock *s, const struct iovec *iov, int cnt, int flags)
{
	size_t n = iov_len(iov, cnt), off = 0;
	char *buf = malloc(n ? n : 1);
	ssize_t r;

	if (!buf)
		return errno = ENOMEM, -1;
	r = exec_sock_recv(fd, s, buf, n, flags);
	for (int i = 0; i < cnt && r > 0 && off < (size_t)r; i++) {
		size_t k = (size_t)r - off < iov[i].iov_len ? (size_t)r - off : iov[i].iov_len;

		memcpy(iov[i].iov_base, buf + off, k);
		off += k;
	}
	free(buf);
	return r;
}

static ssize_t vec_send(int fd, struct exec_sock *s, const struct iovec *iov, int cnt, int flags)
{
	size_t n = iov_len(iov, cnt), off = 0;
	char *buf = malloc(n ? n : 1);
	ssize_t r;

	if (!buf)
		return errno = ENOMEM, -1;
	for (int i = 0; i < cnt; i++) {
		memcpy(buf + off, iov[i].iov_base, iov[i].iov_len);
		off += iov[i].iov_len;
	}
	r = exec_sock_send(fd, s, buf, n, flags);
	free(buf);
	return r;
}

ssize_t readv(int fd, const struct iovec *iov, int cnt)
{
	static void *f;
	struct exec_sock *s = exec_sock_of(fd);

	if (s && s->conn >= 0)
		return vec_recv(fd, s, iov, cnt, 0);
	return ((ssize_t(*)(int, const struct iovec *, int))exec_libc(&f, "readv"))(fd, iov, cnt);
}

ssize_t writev(int fd, const struct iovec *iov, int cnt)
{
	static void *f;
	struct exec_sock *s = exec_sock_of(fd);

	if (s && s->conn >= 0)
		return vec_send(fd, s, iov, cnt, 0);
	return ((ssize_t(*)(int, const struct iovec *, int))exec_libc(&f, "writev"))(fd, iov,
										     cnt);
}

/* Ancillary data is not carried on a followed connection (msg_controllen comes back 0). */
ssize_t recvmsg(int fd, struct msghdr *m, int flags)
{
	static void *f;
	struct exec_sock *s = exec_sock_of(fd);

	if (!s || s->conn < 0)
		return ((ssize_t(*)(int, struct msghdr *, int))exec_libc(&f, "recvmsg"))(fd, m,
											  flags);
	m->msg_controllen = 0;
	m->msg_flags = 0;
	return vec_recv(fd, s, m->msg_iov, (int)m->msg_iovlen, flags);
}

ssize_t sendmsg(int fd, const struct msghdr *m, int flags)
{
	static void *f;
	struct exec_sock *s = exec_sock_of(fd);

	if (!s || s->conn < 0)
		return ((ssize_t(*)(int, const struct msghdr *, int))exec_libc(&f, "sendmsg"))(
			fd, m, flags);
	return vec_send(fd, s, m->msg_iov, (int)m->msg_iovlen, flags);
}

int shutdown(int fd, int how)
{
	static void *f;
	struct exec_sock *s = exec_sock_of(fd);

	if (s && (how == SHUT_WR || how == SHUT_RDWR))
		exec_sock_shut(s);
	return ((int (*)(int, int))exec_libc(&f, "shutdown"))(fd, how);
}

int close(int fd)
{
	static void *f;

	exec_sock_close(fd);
	return ((int (*)(int))exec_libc(&f, "close"))(fd);
}
