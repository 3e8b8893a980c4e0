/* Checks for verbs that fail: the return value, errno, and hcasim_last_error()'s sentence
 * (suites verbs_errors and abi). Criterion's cr_assert_* must be included first. */
#ifndef TB_TB_EXPECT_H
#define TB_TB_EXPECT_H

#include <errno.h>
#include <string.h>

/* call returns NULL and sets errno to err. */
#define EXPECT_NULL_ERR(call, err)                                                                 \
	do {                                                                                       \
		errno = 0;                                                                         \
		const void *p_ = (const void *)(call);                                             \
		int e_ = errno;                                                                    \
		cr_assert_null(p_, "%s succeeded; expected errno %d", #call, (err));               \
		cr_assert_eq(e_, (err), "%s: errno %d (%s), expected %d (%s); last error: %s",     \
			     #call, e_, strerror(e_), (err), strerror(err), hcasim_last_error());  \
	} while (0)

/* call returns the errno value err (verbs that return an error number) and sets errno. */
#define EXPECT_RC_ERR(call, err)                                                                   \
	do {                                                                                       \
		errno = 0;                                                                         \
		int r_ = (int)(call);                                                              \
		int e_ = errno;                                                                    \
		cr_assert_eq(r_, (err), "%s returned %d (%s), expected %d (%s); last error: %s",   \
			     #call, r_, strerror(r_ < 0 ? -r_ : r_), (err), strerror(err),         \
			     hcasim_last_error());                                                 \
		cr_assert_eq(e_, (err), "%s: errno %d (%s), expected %d; last error: %s", #call,   \
			     e_, strerror(e_), (err), hcasim_last_error());                        \
	} while (0)

/* call returns -1 and sets errno to err (ibv_query_gid, ibv_query_pkey, ibv_close_device,
 * ibv_get_async_event). */
#define EXPECT_M1_ERR(call, err)                                                                   \
	do {                                                                                       \
		errno = 0;                                                                         \
		int r_ = (int)(call);                                                              \
		int e_ = errno;                                                                    \
		cr_assert_eq(r_, -1, "%s returned %d, expected -1", #call, r_);                    \
		cr_assert_eq(e_, (err), "%s: errno %d (%s), expected %d (%s); last error: %s",     \
			     #call, e_, strerror(e_), (err), strerror(err), hcasim_last_error());  \
	} while (0)

#define EXPECT_OK(call)                                                                            \
	do {                                                                                       \
		int r_ = (int)(call);                                                              \
		cr_assert_eq(r_, 0, "%s returned %d; last error: %s", #call, r_,                   \
			     hcasim_last_error());                                                 \
	} while (0)

/* hcasim_last_error() names the field or rule. */
#define EXPECT_MSG(substr)                                                                         \
	cr_assert_not_null(strstr(hcasim_last_error(), (substr)),                                  \
			   "last error \"%s\" does not mention \"%s\"", hcasim_last_error(),       \
			   (substr))

#endif
