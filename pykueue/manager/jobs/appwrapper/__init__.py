"""AppWrapper (workload.codeflare.dev/v1beta2): one pod set per pod set of its components."""
