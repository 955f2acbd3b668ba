package v4

// validateEmptyDir checks an emptyDir volume (rules to be written with its executor side).
func validateEmptyDir(p string, e *EmptyDirVolume, pod *PodSpec, errs *FieldErrors) {}

// validateConfigMapVolume checks a configMap volume.
func validateConfigMapVolume(p string, c *ConfigMapVolume, errs *FieldErrors) {}

// validateSecretVolume checks a secret volume.
func validateSecretVolume(p string, s *SecretVolume, errs *FieldErrors) {}
