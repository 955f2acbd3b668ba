package v4

// Application statuses (BCS).
const (
	AppStaging   = "Staging"
	AppDeploying = "Deploying"
	AppRunning   = "Running"
	AppFinish    = "Finish"
	AppAbnormal  = "Abnormal"
	AppError     = "Error"
	AppOperating = "Operating"
	// At spec.instance 0 (berth: scale to zero): Stopping while instances are still
	// stopping, Stopped once none is left. The workload, its history and its services stay.
	AppStopping = "Stopping"
	AppStopped  = "Stopped"
)

// AggregateTaskGroup gives a task group's status from its tasks' statuses with BCS's
// precedence: any Failed, any Killing, any Error, all Finish, all Killed, any Lost, all
// Staging, any Starting, any Restarting, any Running. Mixed ends (some Finish, some Killed)
// count as Finish; no tasks is Staging.
//
// An init task that finished counts no more once another task has a status (it ended
// before the pod ran, as Kubernetes reports init containers apart).
func AggregateTaskGroup(tasks []TaskStatus) string {
	if len(tasks) == 0 {
		return StatusStaging
	}
	count := map[string]int{}
	inits := 0 // init tasks that finished
	for _, t := range tasks {
		if t.Role == RoleInit && t.Status == StatusFinish {
			inits++
			continue
		}
		count[t.Status]++
	}
	n := len(tasks) - inits
	if n == 0 { // only finished init tasks: they are the pod's status
		count[StatusFinish], n = inits, inits
	}
	switch {
	case count[StatusFailed] > 0:
		return StatusFailed
	case count[StatusKilling] > 0:
		return StatusKilling
	case count[StatusError] > 0:
		return StatusError
	case count[StatusFinish] == n:
		return StatusFinish
	case count[StatusKilled] == n:
		return StatusKilled
	case count[StatusFinish]+count[StatusKilled] == n:
		return StatusFinish
	case count[StatusLost] > 0:
		return StatusLost
	case count[StatusStaging] == n:
		return StatusStaging
	case count[StatusStarting] > 0 || count[StatusStaging] > 0:
		return StatusStarting
	case count[StatusRestarting] > 0:
		return StatusRestarting
	}
	return StatusRunning
}

// Terminal reports whether a task or task group status is final: later reports are ignored
// (BCS) and the restart policy decides what follows.
func Terminal(status string) bool {
	switch status {
	case StatusFinish, StatusError, StatusKilled, StatusFailed:
		return true
	}
	return false
}

// AggregateApplication gives an application's status from its task groups' statuses and
// its defined instance count, with BCS's precedence: any Error; any Failed or Lost, or
// fewer task groups than instances, is Abnormal; all Finish; any Staging or Starting is
// Deploying; as many running (Restarting included) as instances is Running; else Abnormal.
func AggregateApplication(phases []string, instances int) string {
	count := map[string]int{}
	for _, p := range phases {
		count[p]++
	}
	switch {
	case count[StatusError] > 0:
		return AppError
	case count[StatusFailed] > 0 || count[StatusLost] > 0:
		return AppAbnormal
	case len(phases) > 0 && count[StatusFinish] == len(phases):
		return AppFinish
	case count[StatusStaging] > 0 || count[StatusStarting] > 0:
		return AppDeploying
	case len(phases) < instances:
		return AppAbnormal
	case count[StatusRunning]+count[StatusRestarting] == instances:
		return AppRunning
	}
	return AppAbnormal
}
