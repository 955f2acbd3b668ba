package v4

// validateFlexVolume checks a flexVolume volume (rules to be written with its agent side).
func validateFlexVolume(p string, f *FlexVolume, errs *FieldErrors) {}
