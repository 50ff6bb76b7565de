/*
 * lspd-gate FD: a jail's first process. It is started ahead of need ("parked"), waits
 * for its jail on FD, then becomes the jail's uid, runs PROGRAM (bwrap) and stays as
 * the reaper of everything the jail leaves behind.
 *
 * 1. The daemon spawns this as root, with an empty environment, as the leader of a
 *    new process group, usually before any jail needs it: Node's spawn() forks the
 *    whole daemon (10-20 ms at a few hundred MB resident, on its one thread), and a
 *    parked gate takes that off a cold query's path. (Node's child_process has no
 *    hook between fork and exec, nor vfork; clone3(CLONE_INTO_CGROUP) is v2 only and
 *    not reachable from Node either.)
 * 2. When a jail claims it, the daemon writes this pid into the jail's cgroups
 *    (memory, pids, cpu): every process of the jail is then born inside them, with no
 *    window in which one could be forked outside. Then it sends one message on FD and
 *    closes it; EOF is the go-ahead:
 *        uid NUL gid NUL n NUL fd_1 NUL ... fd_n NUL program NUL arg NUL ...
 *    Each fd_i is a descriptor of the daemon (the tree, a read-only bind source) that
 *    it checked; this reopens it through /proc/<daemon>/fd/<fd_i>, which names that
 *    open object and not a path, as descriptor 7+i-1 for bwrap's --ro-bind-fd; bwrap
 *    gets no other descriptor past its 0-5 (none the daemon leaked). Then it
 *    drops to uid/gid (no supplementary groups, no capabilities) for good. Anything
 *    amiss (EOF before any byte because the daemon died, gave up or closed the pool,
 *    a malformed or oversized message, root asked for, a descriptor that will not
 *    reopen) exits 125 without running anything.
 * 3. bwrap's monitor exits as soon as the command does, before the sandbox's PID 1
 *    has; that init is then orphaned to the host's init, which in a container may
 *    never reap it (a zombie per jail, counted against the uid's RLIMIT_NPROC). As a
 *    child subreaper (PR_SET_CHILD_SUBREAPER, prctl(2)) this process adopts it and
 *    reaps it, and exits only when it has no child left: when the daemon sees this
 *    process exit, every process of the jail is gone. Its status is bwrap's.
 * 4. PR_SET_PDEATHSIG: if the daemon dies, this dies, bwrap (--die-with-parent)
 *    follows, and the jail's PID namespace with it. A change of uid clears that
 *    setting, so it is set again after the drop.
 * 5. The jail runs as SCHED_BATCH (sched(7)), which every process it starts inherits.
 *    Its weight is unchanged (its cgroups still decide its share); what changes is
 *    that a jailed process made runnable does not preempt the running task. The
 *    daemon's write of a request wakes the server, and on a busy host that wake took
 *    the daemon's core in the middle of its loop turn. The server then ran on a cache
 *    the daemon had just filled, and the daemon waited in the run queue holding the
 *    other requests of its turn. With the policy the server runs when the daemon's
 *    turn ends, or on an idle core at once. bench/ab, 8 clients over four roots on
 *    two cores: 1.24x the answers, the servers' CPU per answer -26%, the daemon's
 *    -14%. A scheduling hint, not a bound: if the host refuses it, the jail runs as
 *    SCHED_OTHER, and test/jail-cpu.test.ts fails. A jailed process may set itself
 *    back to SCHED_OTHER, which is only what it would have had without this.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_MESSAGE 65536
#define MAX_FDS 64
#define FIRST_FD 7

static char message[MAX_MESSAGE + 1];

/* A decimal in [min, max], the whole field. */
static int number(const char *s, long min, long max, long *out)
{
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (*s == '\0' || *end != '\0' || errno != 0 || v < min || v > max)
		return -1;
	*out = v;
	return 0;
}

/* The whole message, up to EOF; its length, or -1 (nothing, an error, too long). */
static ssize_t read_message(int fd)
{
	size_t len = 0;
	for (;;) {
		ssize_t n = read(fd, message + len, MAX_MESSAGE + 1 - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		if (n == 0)
			break;
		len += (size_t)n;
		if (len > MAX_MESSAGE)
			return -1;
	}
	return len == 0 ? -1 : (ssize_t)len;
}

int main(int argc, char **argv)
{
	long fd;
	if (argc != 2 || number(argv[1], 3, 1024, &fd) != 0)
		return 2;
	const pid_t daemon = getppid();
	/* Before waiting: if the daemon is already gone the read below sees EOF. */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || prctl(PR_SET_CHILD_SUBREAPER, 1) != 0 || getppid() != daemon)
		_exit(125);

	ssize_t len = read_message((int)fd);
	if (len < 0 || message[len - 1] != '\0')
		_exit(125);
	close((int)fd);

	/* Split into NUL-terminated fields. */
	static char *field[MAX_MESSAGE + 1]; /* a field is at least its NUL */
	size_t nfield = 0;
	for (char *p = message; p < message + len; p += strlen(p) + 1)
		field[nfield++] = p;
	field[nfield] = NULL;

	long uid, gid, nfd;
	if (nfield < 4 || number(field[0], 1, INT_MAX, &uid) != 0 || number(field[1], 1, INT_MAX, &gid) != 0 ||
	    number(field[2], 0, MAX_FDS, &nfd) != 0 || nfield < (size_t)(4 + nfd))
		_exit(125);
	/* Each reopened above every number in use, then moved to its own: FIRST_FD + i. */
	int mine[MAX_FDS];
	for (long i = 0; i < nfd; i++) {
		long theirs;
		char path[64];
		if (number(field[3 + i], 0, INT_MAX, &theirs) != 0)
			_exit(125);
		snprintf(path, sizeof path, "/proc/%d/fd/%ld", (int)daemon, theirs);
		int opened = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
		if (opened < 0)
			_exit(125);
		mine[i] = fcntl(opened, F_DUPFD_CLOEXEC, FIRST_FD + MAX_FDS);
		if (mine[i] < 0)
			_exit(125);
		close(opened);
	}
	/* dup2 clears close-on-exec: these, and only these past stdio and 3-5, reach bwrap. */
	for (long i = 0; i < nfd; i++) {
		if (dup2(mine[i], FIRST_FD + (int)i) != FIRST_FD + i)
			_exit(125);
		close(mine[i]);
	}
	char **program = field + 3 + nfd;
	if (program[0][0] != '/')
		_exit(125);

	/* For good: no supplementary groups, then the group, then the user (which drops every capability). */
	if (setgroups(0, NULL) != 0 || setresgid((gid_t)gid, (gid_t)gid, (gid_t)gid) != 0 ||
	    setresuid((uid_t)uid, (uid_t)uid, (uid_t)uid) != 0)
		_exit(125);
	uid_t r, e, s;
	if (getresuid(&r, &e, &s) != 0 || r != (uid_t)uid || e != (uid_t)uid || s != (uid_t)uid || setuid(0) == 0)
		_exit(125);
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != daemon)
		_exit(125);

	struct sched_param batch = { 0 };
	(void)sched_setscheduler(0, SCHED_BATCH, &batch);

	pid_t bwrap = fork();
	if (bwrap < 0)
		_exit(125);
	if (bwrap == 0) {
		close_range(FIRST_FD + (unsigned)nfd, ~0U, 0);
		execv(program[0], program);
		_exit(126);
	}
	/* The reaper holds nothing of the jail's: not its stdio (so the daemon sees EOF
	 * when the jail's writers are gone), not the descriptors meant for bwrap. */
	close_range(0, ~0U, 0);

	int status = 0, st;
	pid_t pid;
	for (;;) {
		pid = waitpid(-1, &st, 0);
		if (pid < 0) {
			if (errno == EINTR)
				continue;
			break; /* ECHILD: the jail is empty */
		}
		if (pid == bwrap)
			status = st;
	}
	if (WIFSIGNALED(status)) {
		int sig = WTERMSIG(status);
		signal(sig, SIG_DFL);
		raise(sig);
	}
	return WIFEXITED(status) ? WEXITSTATUS(status) : 125;
}
