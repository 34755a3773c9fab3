// SPDX-License-Identifier: MIT
/*
 * dbr-gpu-owner PROVIDER DEV RUN: the GPU owner of one device for one fio
 * run (gpu/runtime/owner.h). A job process of the engine starts it where none
 * answers yet; it takes the job processes' connections on an abstract
 * socket named after RUN (fio's backend process), PROVIDER and DEV, serves
 * each on a thread of its own, and leaves when RUN ends, or a second after
 * its last job process left (none came: 30 s after its start). Its exit
 * gives the GPU memory and context back, whatever it was doing.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>

#include "owner.h"
#include "provider.h"
#include "stream.h"

/* How long the owner stays with no job process, after one and before any. */
#define LINGER_NS	1000000000ull
#define FIRST_NS	30000000000ull

static const struct gpu_provider *prov;
static int dev_id;
static unsigned int live;
static uint64_t last_change;

static void *serve(void *arg)
{
	int sock = (int)(intptr_t)arg;

	gpu_owner_serve(sock, prov->rt, prov, dev_id);
	__atomic_store_n(&last_change, gpu_now_ns(), __ATOMIC_RELAXED);
	__atomic_sub_fetch(&live, 1, __ATOMIC_RELEASE);
	return NULL;
}

static int listen_on(long run, const char *name_of_prov)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	char name[100];
	int fd, n;

	n = gpu_owner_name(name, sizeof(name), run, name_of_prov, dev_id);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	memcpy(a.sun_path + 1, name, n);
	/* the name is the lock: a second owner started beside this one leaves */
	if (bind(fd, (struct sockaddr *)&a,
		 (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n)) < 0 ||
	    listen(fd, 64) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/* A job process of this user (or root) gets a thread of its own: true. */
static bool take(int lfd)
{
	struct ucred cr;
	socklen_t len = sizeof(cr);
	pthread_attr_t attr;
	pthread_t t;
	bool ok;
	int fd;

	fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	if (fd < 0)
		return false;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) < 0 ||
	    (cr.uid != getuid() && cr.uid != 0)) {
		close(fd);
		return false;
	}
	__atomic_add_fetch(&live, 1, __ATOMIC_ACQUIRE);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	ok = !pthread_create(&t, &attr, serve, (void *)(intptr_t)fd);
	if (!ok) {
		__atomic_sub_fetch(&live, 1, __ATOMIC_RELEASE);
		close(fd);
	}
	pthread_attr_destroy(&attr);
	return ok;
}

/* fio's process RUN, as a pollable fd (-1: poll it by kill(2) instead). */
static int watch_run(long run)
{
#ifdef SYS_pidfd_open
	return (int)syscall(SYS_pidfd_open, (pid_t)run, 0);
#else
	(void)run;
	return -1;
#endif
}

/*
 * fio pins, renices and binds each job process before the engine's init,
 * where the first one starts this program: fork and exec keep that job's
 * CPUs and nice value. The owner serves every job process of the run, so
 * it takes fio's own process's instead (where it may: a nice value below
 * ours needs privilege). Otherwise with cpus_allowed_policy=split the
 * owner's work for every job process ran on the first one's CPU. (Its
 * memory is the job processes' and the GPU's: their NUMA policy decides.)
 */
static void take_fio_placement(long run)
{
	cpu_set_t set;
	int prio;

	if (!sched_getaffinity((pid_t)run, sizeof(set), &set))
		sched_setaffinity(0, sizeof(set), &set);
	errno = 0;
	prio = getpriority(PRIO_PROCESS, (id_t)run);
	if (!errno)
		setpriority(PRIO_PROCESS, 0, prio);
}

static bool time_to_go(uint64_t start, bool served)
{
	uint64_t now = gpu_now_ns();

	if (__atomic_load_n(&live, __ATOMIC_ACQUIRE))
		return false;
	if (!served)
		return now - start > FIRST_NS;
	return now - __atomic_load_n(&last_change, __ATOMIC_RELAXED) > LINGER_NS;
}

int main(int argc, char **argv)
{
	struct pollfd pfd[2];
	uint64_t start = gpu_now_ns();
	bool served = false;
	long run;
	int lfd;

	if (argc != 4 || !(prov = gpu_provider_by_name(argv[1])) || !prov->rt) {
		fprintf(stderr, "usage: %s cuda|hip DEVICE FIO-PID (started by the dmabuf_uring engine)\n",
			argv[0]);
		return 2;
	}
	dev_id = atoi(argv[2]);
	run = atol(argv[3]);
	signal(SIGPIPE, SIG_IGN);
	take_fio_placement(run);
	lfd = listen_on(run, argv[1]);
	if (lfd < 0)
		return errno == EADDRINUSE ? 0 : 1;
	pfd[0] = (struct pollfd){ .fd = lfd, .events = POLLIN };
	pfd[1] = (struct pollfd){ .fd = watch_run(run), .events = POLLIN };
	while (!(pfd[1].fd < 0 && kill((pid_t)run, 0) < 0 && errno == ESRCH)) {
		if (poll(pfd, 2, 100) > 0) {
			if (pfd[1].revents)
				break;		/* fio's process ended */
			/* one refused (another user's) or not served does
			 * not count: the job process that started this one
			 * may still come */
			if ((pfd[0].revents & POLLIN) && take(lfd))
				served = true;
		}
		if (time_to_go(start, served))
			break;
	}
	/*
	 * The name goes first, so that a job process coming now starts a new
	 * owner; one already waiting to be taken finds its connection closed
	 * unanswered and does the same. Job processes still connected (fio's
	 * process ended) find the socket closed: they stop.
	 */
	close(lfd);
	_exit(0);
}
