/*
 * lspd-gate FD PROGRAM [ARG...]: wait for the daemon's go-ahead on FD, then exec PROGRAM.
 *
 * The daemon spawns this as the jail's pool uid, with an empty environment. Before
 * the go-ahead the daemon writes this process's pid into the jail's cgroups (memory
 * and pids). Only then is bwrap exec'd: every process bwrap will fork is born
 * inside the cgroups, with no window in which a child could be forked outside them.
 * (Node's child_process has no hook between fork and exec; clone3(CLONE_INTO_CGROUP)
 * exists only for cgroup v2 and is not reachable from Node either.)
 *
 * The go-ahead is the single byte 'G'. Anything else (EOF because the daemon died or
 * gave up, an error, another byte) exits 125 without exec: never run un-capped.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	if (argc < 3)
		return 2;
	char *end;
	long fd = strtol(argv[1], &end, 10);
	if (*argv[1] == '\0' || *end != '\0' || fd < 3 || fd > 1024)
		return 2;
	char b = 0;
	ssize_t n;
	do
		n = read((int)fd, &b, 1);
	while (n < 0 && errno == EINTR);
	if (n != 1 || b != 'G')
		_exit(125);
	close((int)fd);
	execv(argv[2], argv + 2);
	_exit(126);
}
