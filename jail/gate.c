/*
 * lspd-gate FD PROGRAM [ARG...]: hold a jail until the daemon's go-ahead on FD, then
 * run PROGRAM (bwrap) and stay as the reaper of everything the jail leaves behind.
 *
 * 1. The daemon spawns this as the jail's pool uid, with an empty environment, as
 *    the leader of a new process group. Before the go-ahead the daemon writes this
 *    pid into the jail's cgroups (memory, pids): every process of the jail is then
 *    born inside them, with no window in which one could be forked outside. (Node's
 *    child_process has no hook between fork and exec; clone3(CLONE_INTO_CGROUP)
 *    exists only for cgroup v2 and is not reachable from Node either.)
 *    The go-ahead is the single byte 'G'. Anything else (EOF because the daemon died
 *    or gave up, an error, another byte) exits 125 without running anything.
 * 2. bwrap's monitor exits as soon as the command does, before the sandbox's PID 1
 *    has; that init is then orphaned to the host's init, which in a container may
 *    never reap it (a zombie per jail, counted against the uid's RLIMIT_NPROC). As a
 *    child subreaper (PR_SET_CHILD_SUBREAPER, prctl(2)) this process adopts it and
 *    reaps it, and exits only when it has no child left: when the daemon sees this
 *    process exit, every process of the jail is gone. Its status is bwrap's.
 * 3. PR_SET_PDEATHSIG: if the daemon dies, this dies, bwrap (--die-with-parent)
 *    follows, and the jail's PID namespace with it.
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	if (argc < 3)
		return 2;
	char *end;
	long fd = strtol(argv[1], &end, 10);
	if (*argv[1] == '\0' || *end != '\0' || fd < 3 || fd > 1024)
		return 2;
	/* Before waiting: if the daemon is already gone the read below sees EOF. */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || prctl(PR_SET_CHILD_SUBREAPER, 1) != 0)
		_exit(125);
	char b = 0;
	ssize_t n;
	do
		n = read((int)fd, &b, 1);
	while (n < 0 && errno == EINTR);
	if (n != 1 || b != 'G')
		_exit(125);
	close((int)fd);

	pid_t bwrap = fork();
	if (bwrap < 0)
		_exit(125);
	if (bwrap == 0) {
		execv(argv[2], argv + 2);
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
