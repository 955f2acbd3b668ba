package docker

import "fmt"

// commandLine applies BCS's rules for command (BCS's Value) and args (Arguments):
//   - the image has an entrypoint: a command replaces it and args are its arguments;
//     without a command args alone go to the image's entrypoint;
//   - the image has none: command + args run as the CMD, and no command is an error
//     (Docker would otherwise run the image's CMD, which BCS refuses).
//
// A nil result leaves the image's own value.
func commandLine(image string, imageEntrypoint []string, command string, args []string) (entrypoint, cmd []string, err error) {
	if len(imageEntrypoint) > 0 {
		if command != "" {
			entrypoint = []string{command}
		}
		if len(args) > 0 {
			cmd = append([]string{}, args...)
		}
		return entrypoint, cmd, nil
	}
	if command == "" {
		return nil, nil, fmt.Errorf("image %s has no entrypoint and the task has no command", image)
	}
	return nil, append([]string{command}, args...), nil
}
