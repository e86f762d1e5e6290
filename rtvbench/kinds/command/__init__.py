"""The `command` kind: any external tool as a measured benchmark, its output parsed by a built-in
format (cyclictest, rtla, stress-ng, hyperfine, openssl speed, iperf3) or a mapping of regexes and
JSON paths; the same parsers read results made elsewhere (`rtvbench import`)."""
