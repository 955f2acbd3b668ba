package process

// Who may reach what a task is given (docs/process.md, "Files and permissions"): the
// agent's data dir stays closed to other users, except that a task running as another
// user passes through the pod's directories (0711) to its work dir and log, which are
// its own; secrets and configmap files are readable by their owner only.

// workDirMode is the mode of a directory berth creates for a task, its work dir first:
// its user only, since the packages, configuration and secrets there are the task's, and
// tasks of other task groups run under other uids.
const workDirMode = 0o700
