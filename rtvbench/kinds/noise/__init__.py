"""The `noise` kind: OS noise, the time a busy CPU loses to interruptions (oslat's method), per CPU."""
