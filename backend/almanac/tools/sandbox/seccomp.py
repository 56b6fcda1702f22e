"""The system-call filter every sandboxed program runs under (libseccomp, through `pyseccomp`).

A denylist in the spirit of Docker's default profile, aimed at what the sandbox's other limits
cannot see: memory that is not the process's own (memfd, SysV shared memory and message queues,
POSIX message queues), new namespaces and mounts (a nested tmpfs is unbounded memory), and the
kernel interfaces a contained program has no use for (io_uring, userfaultfd, bpf, perf events,
keyrings, ptrace, modules, clocks, …). Refused calls fail with EPERM, as if the program lacked
the privilege, so programs that probe for a feature fall back. `clone3` fails with ENOSYS (its flags
sit in memory a filter cannot read; the C library then uses `clone`, whose namespace flags are
refused), and `fallocate` and `setxattr` with EOPNOTSUPP (the C library's `posix_fallocate` then
writes the blocks, which the file-size limit and the size of the file system bound; extended
attributes would be kernel memory beside that size). Calls of another
architecture (32-bit or x32 ABI on a 64-bit host) kill the process.

`bubblewrap --seccomp FD` loads the compiled filter right before it starts the program.
"""

from __future__ import annotations

import errno
import functools
import tempfile

DENIED = (
    # memory outside the process's address space
    "memfd_create",
    "memfd_secret",
    "shmget",
    "shmat",
    "shmctl",
    "shmdt",
    "msgget",
    "msgsnd",
    "msgrcv",
    "msgctl",
    "semget",
    "semop",
    "semtimedop",
    "semctl",
    "mq_open",
    "mq_unlink",
    "mq_timedsend",
    "mq_timedreceive",
    "mq_notify",
    "mq_getsetattr",
    # namespaces and mounts
    "unshare",
    "setns",
    "mount",
    "umount2",
    "pivot_root",
    "chroot",
    "open_tree",
    "move_mount",
    "fsopen",
    "fsconfig",
    "fsmount",
    "fspick",
    "mount_setattr",
    "open_by_handle_at",
    "name_to_handle_at",
    # kernel interfaces
    "io_uring_setup",
    "io_uring_enter",
    "io_uring_register",
    "userfaultfd",
    "bpf",
    "perf_event_open",
    "keyctl",
    "add_key",
    "request_key",
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    "process_madvise",
    "kcmp",
    "pidfd_getfd",
    "fanotify_init",
    "lookup_dcookie",
    "move_pages",
    "migrate_pages",
    "mbind",
    "set_mempolicy",
    "set_mempolicy_home_node",
    "vhangup",
    "acct",
    "quotactl",
    "quotactl_fd",
    "syslog",
    "sethostname",
    "setdomainname",
    "settimeofday",
    "clock_settime",
    "clock_adjtime",
    "adjtimex",
    "iopl",
    "ioperm",
    "swapon",
    "swapoff",
    "reboot",
    "kexec_load",
    "kexec_file_load",
    "init_module",
    "finit_module",
    "delete_module",
    "uselib",
    "ustat",
    "sysfs",
    "_sysctl",
    "nfsservctl",
)
# Calls that fail as on a file system without the feature: `fallocate` (the C library's
# `posix_fallocate` then writes the blocks) and extended attributes (kernel memory beside a tmpfs's
# size; programs that copy them ignore this error).
NOT_SUPPORTED = ("fallocate", "setxattr", "lsetxattr", "fsetxattr")
# clone(2) flags that make a namespace: refused, whatever else is asked.
NAMESPACE_FLAGS = (0x00020000, 0x02000000, 0x04000000, 0x08000000, 0x10000000, 0x20000000, 0x40000000)
MAP_HUGETLB = 0x40000
# ioctl(2) requests that push input into a terminal (the sandbox also runs in a session of its own).
TTY_INJECTION = (0x5412, 0x541C)  # TIOCSTI, TIOCLINUX


@functools.cache
def compiled() -> bytes | str:
    """The filter as classic BPF for `bubblewrap --seccomp`, or why it cannot be made here."""
    try:
        import pyseccomp as seccomp
    except (ImportError, OSError, RuntimeError) as exc:  # the module, or libseccomp.so.2, is missing
        return f"no system-call filter: libseccomp is not available ({type(exc).__name__}: {exc})"
    deny = seccomp.ERRNO(errno.EPERM)
    rules = seccomp.SyscallFilter(seccomp.ALLOW)
    rules.set_attr(seccomp.Attr.ACT_BADARCH, seccomp.KILL_PROCESS)
    for name in DENIED:
        try:
            rules.add_rule(deny, name)
        except (ValueError, RuntimeError, OSError):
            continue  # a call this architecture does not have (e.g. iopl on arm64)
    for flag in NAMESPACE_FLAGS:
        rules.add_rule(deny, "clone", seccomp.Arg(0, seccomp.MASKED_EQ, flag, flag))
    # huge pages come from a pool the whole host shares, outside every other limit here
    rules.add_rule(deny, "mmap", seccomp.Arg(3, seccomp.MASKED_EQ, MAP_HUGETLB, MAP_HUGETLB))
    for request in TTY_INJECTION:
        rules.add_rule(deny, "ioctl", seccomp.Arg(1, seccomp.MASKED_EQ, 0xFFFFFFFF, request))
    rules.add_rule(seccomp.ERRNO(errno.ENOSYS), "clone3")
    for name in NOT_SUPPORTED:
        rules.add_rule(seccomp.ERRNO(errno.EOPNOTSUPP), name)
    with tempfile.TemporaryFile() as file:
        rules.export_bpf(file)
        file.seek(0)
        return file.read()
