/*
 * libhaltpoll_cap.so: gives a QEMU process a per-VM host halt-polling window.
 *
 * QEMU 7.2 has no option for KVM_CAP_HALT_POLL, and this machine's kvm module parameters are
 * read-only, so the harness preloads this library into QEMU (LD_PRELOAD). It wraps ioctl():
 * right after a successful KVM_CREATE_VM on /dev/kvm it remembers the VM fd and, when
 * IDLELAB_HALT_POLL_NS is set, issues KVM_ENABLE_CAP(KVM_CAP_HALT_POLL, args[0] = that value).
 * If KVM refuses, KVM_CREATE_VM is made to fail so QEMU stops instead of measuring the wrong
 * configuration.
 *
 * With IDLELAB_HALT_POLL_CTL set, it also listens on a unix stream socket at that path (created
 * once the VM exists) so the value can change while the guest runs. One request per line:
 *   "<decimal ns>"  apply it          -> "ok <ns>" or "error <errno> <text>"
 *   "get"           last value set    -> "ok <ns>" or "ok unset"
 * Each applied value is also reported on stderr, the same line as at start-up.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <linux/kvm.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#define TAG	"idlelab-haltpoll-cap"
#define UNSET	(-1LL)
#define REQ_MAX 64

typedef int (*ioctl_fn)(int fd, unsigned long request, ...);

static ioctl_fn real_ioctl;
static int vm_fd = -1;		     /* the VM whose window we control */
static long long current_ns = UNSET; /* last value KVM accepted */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static char ctl_path[sizeof(((struct sockaddr_un *)0)->sun_path)];

/* Parses a decimal value KVM can take (args[0] must fit in 32 bits). -1 if malformed. */
static long long parse_ns(const char *s)
{
	char *end;
	unsigned long long v;

	if (!s || *s < '0' || *s > '9')
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end != '\0' || v > UINT32_MAX)
		return -1;
	return (long long)v;
}

/* KVM_ENABLE_CAP on the remembered VM fd. Returns 0 or an errno; callers hold `lock`. */
static int enable_cap(int fd, long long ns)
{
	struct kvm_enable_cap cap;

	memset(&cap, 0, sizeof(cap));
	cap.cap = KVM_CAP_HALT_POLL;
	cap.args[0] = (uint64_t)ns;
	if (real_ioctl(fd, KVM_ENABLE_CAP, &cap) < 0)
		return errno;
	current_ns = ns;
	fprintf(stderr, TAG ": KVM_CAP_HALT_POLL=%lld on vm fd %d\n", ns, fd);
	return 0;
}

/* The one thing the control socket does: apply or report a value, answer in `reply`. */
static void handle_request(const char *req, char *reply, size_t len)
{
	long long ns;
	int err;

	pthread_mutex_lock(&lock);
	if (strcmp(req, "get") == 0) {
		if (current_ns == UNSET)
			snprintf(reply, len, "ok unset\n");
		else
			snprintf(reply, len, "ok %lld\n", current_ns);
	} else if ((ns = parse_ns(req)) < 0) {
		snprintf(reply, len, "error %d not a decimal value in 0..%u: '%.20s'\n", EINVAL,
			 UINT32_MAX, req);
	} else if ((err = enable_cap(vm_fd, ns)) != 0) {
		fprintf(stderr, TAG ": error: KVM refused KVM_CAP_HALT_POLL=%lld on vm fd %d: %s\n",
			ns, vm_fd, strerror(err));
		snprintf(reply, len, "error %d %s\n", err, strerror(err));
	} else {
		snprintf(reply, len, "ok %lld\n", ns);
	}
	pthread_mutex_unlock(&lock);
}

/* Serves one client: newline-terminated requests, one reply line each, until it hangs up. */
static void serve_client(int c)
{
	char buf[REQ_MAX], reply[128];
	size_t used = 0;
	ssize_t n;

	while ((n = read(c, buf + used, sizeof(buf) - 1 - used)) > 0) {
		char *nl;

		used += (size_t)n;
		buf[used] = '\0';
		while ((nl = strchr(buf, '\n')) != NULL) {
			*nl = '\0';
			if (nl > buf && nl[-1] == '\r')
				nl[-1] = '\0';
			handle_request(buf, reply, sizeof(reply));
			if (write(c, reply, strlen(reply)) < 0)
				return;
			used -= (size_t)(nl + 1 - buf);
			memmove(buf, nl + 1, used + 1);
		}
		if (used == sizeof(buf) - 1) {
			handle_request("", reply, sizeof(reply)); /* overlong: refuse, start over */
			if (write(c, reply, strlen(reply)) < 0)
				return;
			used = 0;
		}
	}
}

static void *control_thread(void *arg)
{
	int s = (int)(intptr_t)arg;

	for (;;) {
		int c = accept4(s, NULL, NULL, SOCK_CLOEXEC);

		if (c < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			fprintf(stderr, TAG ": error: control socket accept: %s\n",
				strerror(errno));
			return NULL;
		}
		serve_client(c);
		close(c);
	}
}

static void remove_socket(void)
{
	unlink(ctl_path);
}

/* Opens the control socket and starts its thread with every signal blocked, so QEMU's own
 * signals (vCPU kicks, SIGTERM) keep going to QEMU's threads. */
static void start_control(const char *path)
{
	struct sockaddr_un addr;
	sigset_t all, old;
	pthread_t tid;
	int s;

	if (strlen(path) >= sizeof(addr.sun_path)) {
		fprintf(stderr, TAG ": error: IDLELAB_HALT_POLL_CTL path too long: %s\n", path);
		return;
	}
	memset(&addr, 0, sizeof(addr));
	addr.sun_family = AF_UNIX;
	strcpy(addr.sun_path, path);
	strcpy(ctl_path, path);
	s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	unlink(path); /* a socket left by a killed run */
	if (s < 0 || bind(s, (struct sockaddr *)&addr, sizeof(addr)) < 0 || chmod(path, 0600) < 0 ||
	    listen(s, 4) < 0) {
		fprintf(stderr, TAG ": error: control socket %s: %s\n", path, strerror(errno));
		if (s >= 0)
			close(s);
		return;
	}
	atexit(remove_socket);
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	if (pthread_create(&tid, NULL, control_thread, (void *)(intptr_t)s) != 0) {
		fprintf(stderr, TAG ": error: cannot start the control thread\n");
		close(s);
	} else {
		pthread_detach(tid);
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}

static int is_dev_kvm(int fd)
{
	char link[64], target[32];
	ssize_t n;

	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, target, sizeof(target) - 1);
	if (n < 0)
		return 0;
	target[n] = '\0';
	return strcmp(target, "/dev/kvm") == 0;
}

/* A VM was just created: apply the start-up value and open the control channel. Returns 0,
 * or an errno if the requested value could not be applied (the VM must not run). */
static int on_vm_created(int fd)
{
	const char *env = getenv("IDLELAB_HALT_POLL_NS");
	const char *ctl = getenv("IDLELAB_HALT_POLL_CTL");
	int err = 0;

	pthread_mutex_lock(&lock);
	vm_fd = fd;
	if (env && *env) {
		long long ns = parse_ns(env);

		if (ns < 0) {
			fprintf(stderr,
				TAG ": error: IDLELAB_HALT_POLL_NS='%s' is not a decimal value in "
				    "0..%u\n",
				env, UINT32_MAX);
			err = EINVAL;
		} else if ((err = enable_cap(fd, ns)) != 0) {
			fprintf(stderr,
				TAG ": error: KVM refused KVM_CAP_HALT_POLL=%lld on vm fd %d: %s\n",
				ns, fd, strerror(err));
		}
	}
	pthread_mutex_unlock(&lock);
	if (!err && ctl && *ctl && !ctl_path[0])
		start_control(ctl);
	return err;
}

static ioctl_fn next_ioctl(void)
{
	ioctl_fn fn = __atomic_load_n(&real_ioctl, __ATOMIC_ACQUIRE);

	if (!fn) {
		fn = (ioctl_fn)dlsym(RTLD_NEXT, "ioctl");
		__atomic_store_n(&real_ioctl, fn, __ATOMIC_RELEASE);
	}
	return fn;
}

/* Every ioctl of the process comes through here; only KVM_CREATE_VM is looked at. */
int ioctl(int fd, unsigned long request, ...)
{
	ioctl_fn fn = next_ioctl();
	va_list ap;
	void *arg;
	int ret, err;

	va_start(ap, request);
	arg = va_arg(ap, void *);
	va_end(ap);
	if (!fn) {
		errno = ENOSYS;
		return -1;
	}
	ret = fn(fd, request, arg);
	if (request != KVM_CREATE_VM || ret < 0 || !is_dev_kvm(fd))
		return ret;
	err = on_vm_created(ret);
	if (err) {
		close(ret);
		errno = err;
		return -1;
	}
	return ret;
}
